package driver

// Provenance says who or what decided a permission: a decision's
// decided_by. Rules, the user's and the built-in floor's alike, decide as
// "rule:<id>" (ByRule); floor rule ids start with "floor-".
type Provenance string

// Provenances.
const (
	ByDefault    Provenance = "default"    // the mode's default
	ByHuman      Provenance = "human"      // answered at the terminal
	ByAnswerer   Provenance = "answerer"   // answered by the policy's answerer (a supervisor agent, a judge)
	ByRemembered Provenance = "remembered" // an earlier "always" answer
	ByCancel     Provenance = "cancel"     // the turn was cancelled, or nobody could be asked (--non-interactive fail)
	ByAudit      Provenance = "audit"      // denied: the decision could not be recorded in the audit log
	ByDriver     Provenance = "tai"        // no decision came (the decider failed, the turn ended): the driver cancelled
)

// ByRule is the provenance of a rule: "rule:<id>".
func ByRule(id string) Provenance { return Provenance("rule:" + id) }
