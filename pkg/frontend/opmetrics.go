package frontend

import (
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// beginOperation counts msg in the per-operation metrics from now until
// the exchange's end (observeEnd): a request, once its method and target
// are in the exchange's record, labelled by the fleet's union catalog.
// Notifications and responses are no operations; nor is anything of an
// exchange without a record (the record is what observeEnd ends).
func (f *Frontend) beginOperation(w http.ResponseWriter, msg *protocol.Message) {
	if rec := httpx.RecordOf(w); rec != nil && msg.Kind() == protocol.KindRequest {
		f.metrics.BeginOperation(rec, f.fleet)
	}
}
