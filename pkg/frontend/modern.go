package frontend

import (
	"net/http"
	"slices"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// modernMethods are the client requests of the stateless era.
var modernMethods = map[string]bool{
	protocol.MethodServerDiscover: true,
	protocol.MethodToolsList:      true, protocol.MethodToolsCall: true,
	protocol.MethodPromptsList: true, protocol.MethodPromptsGet: true,
	protocol.MethodResourcesList: true, protocol.MethodResourcesTemplatesList: true,
	protocol.MethodResourcesRead: true, protocol.MethodCompletionComplete: true,
}

// postModern serves a 2026-07-28 request: self-contained, no session.
func (f *Frontend) postModern(w http.ResponseWriter, r *http.Request, msg *protocol.Message, head *protocol.ParamsHead, body []byte) {
	switch msg.Kind() {
	case protocol.KindResponse:
		httpError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Bad Request: clients must not send JSON-RPC responses in 2026-07-28")
		return
	case protocol.KindNotification:
		w.WriteHeader(http.StatusAccepted)
		return
	}
	meta := head.Meta
	switch {
	case meta == nil:
		writeError(w, http.StatusBadRequest, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: params._meta is required"))
		return
	case meta.ProtocolVersion == nil:
		writeError(w, http.StatusBadRequest, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: _meta[%q] is required", protocol.MetaProtocolVersion))
		return
	case meta.ClientCapabilities == nil:
		writeError(w, http.StatusBadRequest, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: _meta[%q] is required", protocol.MetaClientCapabilities))
		return
	}
	version := *meta.ProtocolVersion
	hv := r.Header.Get(hdrProtocolVersion)
	if hv != version {
		writeError(w, http.StatusBadRequest, msg.ID, protocol.NewError(protocol.CodeHeaderMismatch,
			"header mismatch: MCP-Protocol-Version %q does not equal _meta protocolVersion %q", hv, version))
		return
	}
	if !protocol.IsModernVersion(version) {
		writeError(w, http.StatusBadRequest, msg.ID, protocol.NewError(protocol.CodeUnsupportedProtocolVersion,
			"unsupported protocol version %q", version).WithData(&protocol.UnsupportedVersionData{
			Supported: slices.Clone(protocol.SupportedVersions), Requested: version,
		}))
		return
	}
	if !modernMethods[msg.Method] {
		writeError(w, http.StatusNotFound, msg.ID, protocol.NewError(protocol.CodeMethodNotFound, "method not found: %q", msg.Method))
		return
	}
	f.forward(w, r, &forwardSpec{era: protocol.EraModern, msg: msg, body: body, name: routingName(msg.Method, head)})
}
