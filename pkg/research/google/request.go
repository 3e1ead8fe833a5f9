package google

import (
	"encoding/base64"
	"encoding/json"
)

// CreateRequest is what one create carries beyond the agent: the
// question, inline document or image parts, the turn it follows, the Deep
// Research agent's options and the tools it may use. Its body is the SDKs'
// CreateAgentInteraction (held to google.golang.org/genai's type in
// sdk_test.go); docs/research.md, "Requests".
type CreateRequest struct {
	// Input is the question (or, for a plan's confirming turn, the
	// confirmation or revision text).
	Input string
	// Parts are inline documents and images sent after the text.
	Parts []Part
	// PreviousInteractionID is the interaction this turn follows: the
	// plan for a confirming turn, the parent for a follow-up.
	PreviousInteractionID string
	// CollaborativePlanning, when true, asks the agent for a research plan
	// and to go on only when the next turn confirms it. A confirming turn
	// sends it false.
	CollaborativePlanning *bool
	// Visualization is "" (the agent's default) or "auto"/"off".
	Visualization string
	Tools         []Tool
}

// Part is one input: a document (the SDKs' DocumentContent MIME types) or
// an image (their ImageContent MIME types). Inline bytes are sent base64
// encoded as the content block's data, as the SDKs send them; a file the
// Files API holds is sent by its URI instead (files.go).
type Part struct {
	MimeType string
	Data     []byte
	// URI is a Files API file's uri (Data is then empty).
	URI string
	// Processing narrows a document to pages or a sheet, or picks its
	// content layers (nil: all of it, as the API chooses).
	Processing *Processing
	// Resolution is the media resolution the document or image is read
	// at (MediaResolution: low, medium, high, ultra_high; "": the API's).
	Resolution string
}

// Processing is the SDKs' DocumentStaticMediaProcessing: static
// processing of a page range (paginated documents) or of one sheet and
// its cells (spreadsheets). Exactly one of Pages and Sheet is set.
type Processing struct {
	Pages *PageOptions
	Sheet *SheetOptions
}

// PageOptions is PageProcessingOptions: 1-indexed, inclusive; 0 is unset.
type PageOptions struct {
	StartPage int `json:"start_page,omitempty"`
	EndPage   int `json:"end_page,omitempty"`
	// ContentLayers are the layers to extract (PageLayers; none: the
	// API's choice).
	ContentLayers []string `json:"content_layers,omitempty"`
}

// SheetOptions is SpreadsheetProcessingOptions: the 1-indexed sheet (0:
// every sheet) and the cells in A1 notation ("": the occupied area).
type SheetOptions struct {
	SheetIndex   int    `json:"sheet_index,omitempty"`
	VisibleCells string `json:"visible_cells,omitempty"`
	// ContentLayers are the layers to extract (SheetLayers).
	ContentLayers []string `json:"content_layers,omitempty"`
}

// The content layers and media resolutions of google.golang.org/genai
// v1.79.1's interactions types: PageProcessingOptionsContentLayer,
// SpreadsheetProcessingOptionsContentLayer and MediaResolution.
var (
	PageLayers       = []string{"page_image", "page_text"}
	SheetLayers      = []string{"visual", "data", "formulas"}
	MediaResolutions = []string{"low", "medium", "high", "ultra_high"}
)

// Tool is one tool declaration: exactly one of its fields is set.
type Tool struct {
	FileSearchStores []string
	URLContext       bool
	MCPServer        *MCPServer
}

// MCPServer is an mcp_server tool. Headers hold secrets (read from header
// profiles right before the request); they are never logged or stored.
type MCPServer struct {
	Name    string
	URL     string
	Headers map[string]string
}

// The Office and OpenDocument MIME types of the SDKs' DocumentContent
// enum (google.golang.org/genai v1.78.0 and later).
const (
	MimeDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	MimeDOTX = "application/vnd.openxmlformats-officedocument.wordprocessingml.template"
	MimeXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	MimePPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	MimeDOC  = "application/msword"
	MimeXLS  = "application/vnd.ms-excel"
	MimePPT  = "application/vnd.ms-powerpoint"
	MimeODT  = "application/vnd.oasis.opendocument.text"
	MimeODS  = "application/vnd.oasis.opendocument.spreadsheet"
	MimeODP  = "application/vnd.oasis.opendocument.presentation"
)

// DocumentMimeTypes and ImageMimeTypes are the MIME types the SDKs'
// DocumentContentMimeType and ImageContentMimeType enums name.
var (
	DocumentMimeTypes = []string{"application/pdf", "text/csv", MimeDOCX, MimeDOC, MimeDOTX, MimeXLSX, MimeXLS, MimePPTX, MimePPT, MimeODT, MimeODS, MimeODP}
	ImageMimeTypes    = []string{"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif", "image/gif", "image/bmp", "image/tiff"}
)

// PartType is "document" or "image" for a MIME type the SDK enums name,
// else "".
func PartType(mime string) string {
	for _, m := range DocumentMimeTypes {
		if m == mime {
			return "document"
		}
	}
	for _, m := range ImageMimeTypes {
		if m == mime {
			return "image"
		}
	}
	return ""
}

type createBody struct {
	Agent                 string          `json:"agent"`
	Input                 json.RawMessage `json:"input"`
	PreviousInteractionID string          `json:"previous_interaction_id,omitempty"`
	Background            bool            `json:"background"`
	Store                 bool            `json:"store"`
	AgentConfig           agentConfig     `json:"agent_config"`
	Tools                 []any           `json:"tools,omitempty"`
}

// agentConfig is the SDKs' DeepResearchAgentConfig. Thinking summaries
// are asked for ("auto"): the interaction's stream shows them as progress
// while the job runs; they are never stored or published.
type agentConfig struct {
	Type                  string `json:"type"`
	ThinkingSummaries     string `json:"thinking_summaries"`
	CollaborativePlanning *bool  `json:"collaborative_planning,omitempty"`
	Visualization         string `json:"visualization,omitempty"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type dataPart struct {
	Type       string          `json:"type"`
	MimeType   string          `json:"mime_type"`
	Data       string          `json:"data,omitempty"`
	URI        string          `json:"uri,omitempty"`
	Processing *processingBody `json:"processing,omitempty"`
	Resolution string          `json:"resolution,omitempty"`
}

// processingBody is DocumentStaticMediaProcessing on the wire.
type processingBody struct {
	Type               string        `json:"type"`
	PageOptions        *PageOptions  `json:"page_options,omitempty"`
	SpreadsheetOptions *SheetOptions `json:"spreadsheet_options,omitempty"`
}

type fileSearchTool struct {
	Type   string   `json:"type"`
	Stores []string `json:"file_search_store_names"`
}

type mcpServerTool struct {
	Type    string            `json:"type"`
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// body is the JSON of the create. The input is the question as a string
// when it has no parts (as the SDKs' README sends it), else a content
// list: the text, then each part in order.
func (cr CreateRequest) body(agent string) createBody {
	b := createBody{
		Agent: agent, PreviousInteractionID: cr.PreviousInteractionID, Background: true, Store: true,
		AgentConfig: agentConfig{Type: "deep-research", ThinkingSummaries: "auto", CollaborativePlanning: cr.CollaborativePlanning, Visualization: cr.Visualization},
	}
	if len(cr.Parts) == 0 {
		b.Input, _ = json.Marshal(cr.Input)
	} else {
		list := []any{textPart{Type: "text", Text: cr.Input}}
		for _, p := range cr.Parts {
			dp := dataPart{Type: PartType(p.MimeType), MimeType: p.MimeType, URI: p.URI, Resolution: p.Resolution}
			if p.URI == "" {
				dp.Data = base64.StdEncoding.EncodeToString(p.Data)
			}
			if p.Processing != nil {
				dp.Processing = &processingBody{Type: "static", PageOptions: p.Processing.Pages, SpreadsheetOptions: p.Processing.Sheet}
			}
			list = append(list, dp)
		}
		b.Input, _ = json.Marshal(list)
	}
	for _, t := range cr.Tools {
		switch {
		case len(t.FileSearchStores) > 0:
			b.Tools = append(b.Tools, fileSearchTool{Type: "file_search", Stores: t.FileSearchStores})
		case t.URLContext:
			b.Tools = append(b.Tools, map[string]string{"type": "url_context"})
		case t.MCPServer != nil:
			b.Tools = append(b.Tools, mcpServerTool{Type: "mcp_server", Name: t.MCPServer.Name, URL: t.MCPServer.URL, Headers: t.MCPServer.Headers})
		}
	}
	return b
}
