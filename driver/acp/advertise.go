package acp

import schema "github.com/tai-dev/tai/protocol/acp"

// handledSession advertises what tai handles of the session capabilities,
// so that agents following the schema send it: notices and compaction
// updates (shown by the renderers, passed on by tai acp), and boolean
// config options (set with SetConfig). TestAdvertisedMatchesTheSchema
// keeps it in step with what the driver handles and the schema names.
var handledSession = schema.ClientSessionCapabilities{
	Notices:       &schema.EmptyObject{},
	Compaction:    &schema.EmptyObject{},
	ConfigOptions: schema.ClientConfigOptionsCapabilities{Boolean: &schema.EmptyObject{}},
}

// gatedUpdates are the session update kinds an agent may send only to a
// client that advertised a capability, by that capability's path under
// clientCapabilities.
var gatedUpdates = map[string]string{
	schema.UpdateNotice:                 "session.notices",
	schema.UpdateCompactionUpdate:       "session.compaction",
	schema.UpdateCompactionSummaryChunk: "session.compaction",
}
