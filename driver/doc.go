// Package driver holds tai's common model: the events every driver emits, the
// Session a driver hands back, and the Host services a driver calls.
//
// A driver (ACP, PTY, stream-json, A2A) translates one wire protocol into this
// model, in both directions, and does nothing else. Policy, file confinement,
// auditing, rendering and budgets consume only these types, so they are
// written once and hold for every driver.
package driver
