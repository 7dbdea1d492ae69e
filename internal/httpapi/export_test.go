package httpapi

// Route is a route of the API's table, for the tests outside the package.
type Route struct {
	Method, Path string
	// Public is true for a route that takes no authentication.
	Public bool
}

// Routes lists the routes of the API's table, in its order.
func Routes() []Route {
	var out []Route
	for _, rt := range (&Server{}).table() {
		out = append(out, Route{Method: rt.method, Path: rt.path, Public: rt.access != keyOrSession})
	}
	return out
}

// OpenAPIDocument is the document GET /api/openapi.json answers.
func OpenAPIDocument() []byte { return openapiDoc }
