package config

import (
	"slices"
	"strings"
)

// The fields of an endpoint that may say user_provided: each user supplies
// their own value (docs/config.md, "Keys each user provides").
const (
	FieldAPIKey  = "apiKey"
	FieldBaseURL = "baseURL"
)

// UserEndpoint is an endpoint whose key or base URL each user supplies.
type UserEndpoint struct {
	// Name is the provider agents name: openAI, anthropic, google,
	// azureOpenAI or a custom endpoint's name, as configured.
	Name string
	// Fields are FieldAPIKey and FieldBaseURL, those that say user_provided,
	// in that order.
	Fields []string
}

// Takes reports whether field is one the user supplies.
func (u UserEndpoint) Takes(field string) bool { return slices.Contains(u.Fields, field) }

// UserProvided lists the endpoints with a user_provided apiKey or baseURL,
// in the order of Providers. The groups of azureOpenAI are one endpoint: a
// user's values serve every group that asks for them.
func (e *Endpoints) UserProvided() []UserEndpoint {
	var out []UserEndpoint
	add := func(name string, pairs ...[2]string) {
		u := UserEndpoint{Name: name}
		for _, f := range []string{FieldAPIKey, FieldBaseURL} {
			for _, p := range pairs {
				if p[0] == f && p[1] == UserProvided && !u.Takes(f) {
					u.Fields = append(u.Fields, f)
				}
			}
		}
		if len(u.Fields) > 0 {
			out = append(out, u)
		}
	}
	fields := func(ep Endpoint) [][2]string {
		return [][2]string{{FieldAPIKey, ep.APIKey}, {FieldBaseURL, ep.BaseURL}}
	}
	add(ProviderOpenAI, fields(e.OpenAI)...)
	add(ProviderAnthropic, fields(e.Anthropic)...)
	add(ProviderGoogle, fields(e.Google)...)
	var azure [][2]string
	for _, g := range e.AzureOpenAI.Groups {
		azure = append(azure, [2]string{FieldAPIKey, g.APIKey}, [2]string{FieldBaseURL, g.BaseURL})
	}
	add(ProviderAzureOpenAI, azure...)
	for _, c := range e.Custom {
		add(c.Name, fields(c.Endpoint)...)
	}
	return out
}

// UserEndpoint returns the endpoint named name (without case) among
// UserProvided, and whether there is one.
func (e *Endpoints) UserEndpoint(name string) (UserEndpoint, bool) {
	for _, u := range e.UserProvided() {
		if strings.EqualFold(u.Name, name) {
			return u, true
		}
	}
	return UserEndpoint{}, false
}
