package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// NEOName is the name of the NEO search server of the reference example
// internal/prompt/testdata/neo.reference.txt.
const NEOName = "neo-search-server"

// NEOInstructions are the NEO server's instructions: the example's
// serverInstructions for it, as the YAML block scalar yields them (each line
// ending in a newline), in UTF-8 ("📄" and "→", docs/prompt.md "Exact texts").
// The server also sends them in its initialize result.
const NEOInstructions = `You have access to search tools for nuclear regulation documents using a 2-STEP process.

**STEP 1 - DOCUMENT DISCOVERY:**
Use 'zoek_documenten_*' tools FIRST to identify relevant documents.
Results show "📄 Document ID: [number]" for each document.
Check the SUMMARY at the end for all unique Document IDs.

**STEP 2 - FOCUSED SEARCH:**
Use 'zoek_in_specifieke_*' tools with the Document IDs from Step 1.
Pass doc_ids as a list of integers: [39248184, 12345]
NOT [0, 1, 2] - use the actual Document ID numbers!

**AVAILABLE COLLECTIONS:**
- Nederlandse wetgeving: zoek_documenten_nederlandse_wetgeving → zoek_in_specifieke_wetgeving
- IAEA documenten: zoek_documenten_iaea_kennis → zoek_in_specifieke_iaea_documenten
- ANVS documenten: zoek_documenten_anvs_kennis → zoek_in_specifieke_anvs_documenten

**CITATION FORMAT:**
Use citation markers exactly as provided in search results: \ue202turn0file{n}
Place markers immediately after sentences derived from that source.

Always answer in the user's language (Dutch).
`

// The input schemas of the NEO tools, as the example lists them.
const (
	neoDiscoverySchema = `{"type":"object","properties":{"question":{"type":"string","description":"The search query or question"},"num_results":{"type":"integer","description":"Number of results to return (1-10, default: 5)"}},"required":["question"]}`
	neoFocusedSchema   = `{"type":"object","properties":{"question":{"type":"string","description":"The search query or question"},"doc_ids":{"type":"array","items":{"type":"integer"},"description":"List of document IDs to search within (from step 1 SUMMARY)"},"num_results":{"type":"integer","description":"Number of chunks to return (1-20, default: 10)"}},"required":["question","doc_ids"]}`
)

// neoDoc is one document of a fake NEO collection.
type neoDoc struct {
	ID    int
	Title string
	Pages string
	URL   string
	Text  string
}

// neoCollection is one of the NEO server's three document collections, with
// its discovery and focused-search tools.
type neoCollection struct {
	discover, focus string // tool names
	discoverDesc    string
	focusDesc       string
	docs            []neoDoc
}

func neoCollections() []neoCollection {
	return []neoCollection{
		{
			discover:     "zoek_documenten_nederlandse_wetgeving",
			focus:        "zoek_in_specifieke_wetgeving",
			discoverDesc: "STEP 1: Search Dutch legislation database to discover which documents are relevant to your query. Use this tool FIRST to identify relevant documents. Each result displays '📄 Document ID: [number]' - these are the IDs you need for step 2. After reviewing results, use 'zoek_in_specifieke_wetgeving' with the document IDs from the summary for focused search.",
			focusDesc:    "STEP 2: Search within specific Dutch legislation documents that you've already identified. Use this tool AFTER 'zoek_documenten_nederlandse_wetgeving'. IMPORTANT: doc_ids requires actual Document ID numbers from step 1 (e.g., [39248184, 12345], NOT [0, 1, 2]).",
			docs: []neoDoc{
				{39248184, "Besluit stralingsbescherming", "12, 15, 18", "https://wetten.overheid.nl/BWBR0040179", "Artikel 4.1 - Dosislimieten voor werknemers: de effectieve dosis voor blootgestelde werknemers bedraagt ten hoogste 20 mSv per kalenderjaar."},
				{39248190, "Kernenergiewet", "3, 7", "https://wetten.overheid.nl/BWBR0002402", "Artikel 15 - Het is verboden zonder vergunning een inrichting waarin kernenergie kan worden vrijgemaakt op te richten, in werking te brengen of te houden."},
				{39248195, "Besluit kerninstallaties, splijtstoffen en ertsen", "21", "https://wetten.overheid.nl/BWBR0002667", "Artikel 7 - De aanvraag om een vergunning bevat een veiligheidsrapport en een milieueffectrapport."},
			},
		},
		{
			discover:     "zoek_documenten_iaea_kennis",
			focus:        "zoek_in_specifieke_iaea_documenten",
			discoverDesc: "STEP 1: Search IAEA nuclear safety database to discover which documents are relevant to your query. Use this tool FIRST to identify relevant IAEA documents. After reviewing results, use 'zoek_in_specifieke_iaea_documenten' with the document IDs for focused search.",
			focusDesc:    "STEP 2: Search within specific IAEA nuclear safety documents that you've already identified. Use this tool AFTER 'zoek_documenten_iaea_kennis'. IMPORTANT: doc_ids requires actual Document ID numbers from step 1.",
			docs: []neoDoc{
				{51004417, "GSR Part 3: Radiation Protection and Safety of Radiation Sources", "44, 46", "https://www.iaea.org/publications/8930", "Requirement 12: The government or the regulatory body shall establish dose limits for occupational exposure and public exposure."},
				{51004431, "SSR-2/1: Safety of Nuclear Power Plants: Design", "9", "https://www.iaea.org/publications/10885", "Requirement 5: The design shall be such as to keep radiation exposure of workers as low as reasonably achievable."},
			},
		},
		{
			discover:     "zoek_documenten_anvs_kennis",
			focus:        "zoek_in_specifieke_anvs_documenten",
			discoverDesc: "STEP 1: Search ANVS nuclear safety database to discover which documents are relevant to your query. Use this tool FIRST to identify relevant ANVS documents. After reviewing results, use 'zoek_in_specifieke_anvs_documenten' with the document IDs for focused search.",
			focusDesc:    "STEP 2: Search within specific ANVS nuclear safety documents that you've already identified. Use this tool AFTER 'zoek_documenten_anvs_kennis'. IMPORTANT: doc_ids requires actual Document ID numbers from step 1.",
			docs: []neoDoc{
				{62000105, "Leidraad stralingsbescherming bij kerninstallaties", "2, 5", "https://www.autoriteitnvs.nl/documenten/leidraad-stralingsbescherming", "Hoofdstuk 3 - De vergunninghouder stelt een stralingsbeschermingsprogramma op dat het ALARA-beginsel toepast."},
				{62000119, "Handboek meldingen kerninstallaties", "11", "https://www.autoriteitnvs.nl/documenten/handboek-meldingen", "Paragraaf 2.4 - Een overschrijding van een dosislimiet wordt binnen 24 uur gemeld aan de ANVS."},
			},
		},
	}
}

// NEOToolNames are the NEO server's tools in the order the example lists them
// and the server lists them.
func NEOToolNames() []string {
	var names []string
	for _, c := range neoCollections() {
		names = append(names, c.discover, c.focus)
	}
	return names
}

// NEO returns the options of a test server that stands for the example's NEO
// search server: named "neo-search-server", sending [NEOInstructions] in its
// initialize result, and serving exactly the example's six tools, with its names,
// descriptions and input schemas, listed in the example's order (the sdk alone
// would list them by name). Their handlers return fake but plausible search
// results in the shape the example's instructions describe. Setting Configure on the result
// replaces what keeps the standard tools out and the order right, so call
// the original from a new one.
func NEO() Options {
	var tools []Tool
	for _, c := range neoCollections() {
		tools = append(tools,
			Tool{
				Tool:    &sdk.Tool{Name: c.discover, Description: c.discoverDesc, InputSchema: json.RawMessage(neoDiscoverySchema)},
				Handler: c.discoverHandler,
			},
			Tool{
				Tool:    &sdk.Tool{Name: c.focus, Description: c.focusDesc, InputSchema: json.RawMessage(neoFocusedSchema)},
				Handler: c.focusHandler,
			})
	}
	order := NEOToolNames()
	return Options{
		Name:         NEOName,
		Instructions: NEOInstructions,
		ExtraTools:   tools,
		Configure: func(srv *sdk.Server) {
			var standard []string
			for _, t := range standardTools(nil) {
				standard = append(standard, t.Tool.Name)
			}
			srv.RemoveTools(standard...)
			srv.AddReceivingMiddleware(listInOrder(order))
		},
	}
}

// listInOrder makes tools/list answer in the given order of names (others
// after them, by name) rather than the sdk's order by name.
func listInOrder(order []string) sdk.Middleware {
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*sdk.ListToolsResult); ok && err == nil && method == "tools/list" {
				tools := slices.Clone(lt.Tools)
				slices.SortStableFunc(tools, func(a, b *sdk.Tool) int { return rank(a.Name) - rank(b.Name) })
				lt.Tools = tools
			}
			return res, err
		}
	}
}

func (c neoCollection) discoverHandler(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		Question   *string `json:"question"`
		NumResults *int    `json:"num_results"`
	}
	if err := args(req, &in); err != nil {
		return toolError("%v", err), nil
	}
	if in.Question == nil || strings.TrimSpace(*in.Question) == "" {
		return toolError("invalid arguments for %s: question is required", c.discover), nil
	}
	n := 5
	if in.NumResults != nil {
		n = *in.NumResults
	}
	if n < 1 || n > 10 {
		return toolError("invalid arguments for %s: num_results must be between 1 and 10", c.discover), nil
	}
	docs := c.docs[:min(n, len(c.docs))]
	var b strings.Builder
	b.WriteString("📚 DOCUMENT DISCOVERY - Relevant Documents Found:\n")
	b.WriteString(strings.Repeat("=", 80))
	b.WriteString("\n")
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = strconv.Itoa(d.ID)
		fmt.Fprintf(&b, "\n📄 **Document ID: %d**\n   Title: %s\n   Relevance Score: %.4f\n   Matching Chunks: %d\n", d.ID, d.Title, 0.8542-0.0731*float64(i), 3-i%3)
	}
	fmt.Fprintf(&b, "\n📋 **SUMMARY: Found %d unique document(s)**\n**Document IDs for STEP 2:** [%s]\n", len(docs), strings.Join(ids, ", "))
	fmt.Fprintf(&b, "\n💡 **Next Step:** Use '%s' with the document IDs above.", c.focus)
	return text(b.String()), nil
}

func (c neoCollection) focusHandler(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		Question   *string `json:"question"`
		DocIDs     []int   `json:"doc_ids"`
		NumResults *int    `json:"num_results"`
	}
	if err := args(req, &in); err != nil {
		return toolError("%v", err), nil
	}
	if in.Question == nil || strings.TrimSpace(*in.Question) == "" || len(in.DocIDs) == 0 {
		return toolError("invalid arguments for %s: question and doc_ids are required", c.focus), nil
	}
	n := 10
	if in.NumResults != nil {
		n = *in.NumResults
	}
	if n < 1 || n > 20 {
		return toolError("invalid arguments for %s: num_results must be between 1 and 20", c.focus), nil
	}
	var b strings.Builder
	b.WriteString("Retrieved context:\n")
	found := 0
	for _, id := range in.DocIDs {
		i := slices.IndexFunc(c.docs, func(d neoDoc) bool { return d.ID == id })
		if i < 0 || found == n {
			continue
		}
		d := c.docs[i]
		fmt.Fprintf(&b, "\n📄 Document ID: %d\n%s (Pages: %s)\nURL: %s\n\n%s\n%s\n", d.ID, d.Title, d.Pages, d.URL, d.Text, strings.Repeat("=", 31))
		found++
	}
	if found == 0 {
		return toolError("No documents with IDs %v in this collection. Use the Document ID numbers from step 1 (%s), not result positions.", in.DocIDs, c.discover), nil
	}
	return text(strings.TrimSuffix(b.String(), "\n")), nil
}
