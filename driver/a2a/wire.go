package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
)

// This file is the dialect-neutral model of what an A2A agent sends, and
// the one tolerant decoder for all three dialects: 0.x objects carry a
// `kind`, 1.0 stream items are a single wrapper key, the draft sends bare
// {id, status, final} objects. Whatever is not recognised is kept raw.

// State is a task state, normalised to the 0.x spelling ("input-required").
// States this build does not know pass through as they came (lowercased).
type State string

// Task states.
const (
	StateSubmitted     State = "submitted"
	StateWorking       State = "working"
	StateInputRequired State = "input-required"
	StateAuthRequired  State = "auth-required"
	StateCompleted     State = "completed"
	StateCanceled      State = "canceled"
	StateFailed        State = "failed"
	StateRejected      State = "rejected"
	StateUnknown       State = "unknown"
)

// normState maps TASK_STATE_INPUT_REQUIRED and input-required alike.
func normState(s string) State {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimPrefix(t, "task_state_")
	t = strings.ReplaceAll(t, "_", "-")
	switch t {
	case "cancelled":
		return StateCanceled
	case "", "unspecified":
		return StateUnknown
	}
	return State(t)
}

// Terminal: the task is over and takes no more input.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateCanceled, StateFailed, StateRejected:
		return true
	}
	return false
}

// Interrupted: the task waits for the client (an answer, credentials).
func (s State) Interrupted() bool { return s == StateInputRequired || s == StateAuthRequired }

// running: the agent is still at it; anything else ends the turn.
func (s State) running() bool { return s == StateSubmitted || s == StateWorking }

// Part is one content part. Text parts set IsText; file and data parts are
// kept as received in Raw.
type Part struct {
	Text   string
	IsText bool
	Raw    json.RawMessage
}

func decodePart(raw json.RawMessage) Part {
	var p struct {
		Kind string  `json:"kind"`
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &p) == nil && p.Text != nil && (p.Kind == "" || p.Kind == "text") && (p.Type == "" || p.Type == "text") {
		return Part{Text: *p.Text, IsText: true, Raw: raw}
	}
	return Part{Raw: raw}
}

func decodeParts(raws []json.RawMessage) []Part {
	out := make([]Part, 0, len(raws))
	for _, r := range raws {
		out = append(out, decodePart(r))
	}
	return out
}

// partsText joins the text parts.
func partsText(ps []Part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.IsText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Roles, normalised from ROLE_AGENT / agent.
const (
	roleAgent = "agent"
	roleUser  = "user"
)

func normRole(r string) string {
	return strings.TrimPrefix(strings.ToLower(r), "role_")
}

// Message is an A2A message.
type Message struct {
	ID        string
	Role      string // agent | user | as sent
	ContextID string
	TaskID    string
	Parts     []Part
	// Metadata is the message's metadata object as sent (a failure's
	// limit fields: quota.FromFields).
	Metadata json.RawMessage
	Raw      json.RawMessage
}

type wireMessage struct {
	MessageID string            `json:"messageId"`
	Role      string            `json:"role"`
	ContextID string            `json:"contextId"`
	SessionID string            `json:"sessionId"` // draft
	TaskID    string            `json:"taskId"`
	Parts     []json.RawMessage `json:"parts"`
	Metadata  json.RawMessage   `json:"metadata"`
}

func (w *wireMessage) message(raw json.RawMessage) *Message {
	if w == nil {
		return nil
	}
	return &Message{ID: w.MessageID, Role: normRole(w.Role), ContextID: orDefault(w.ContextID, w.SessionID), TaskID: w.TaskID,
		Parts: decodeParts(w.Parts), Metadata: w.Metadata, Raw: raw}
}

// Status is a task's status.
type Status struct {
	State    State
	RawState string
	Message  *Message
}

type wireStatus struct {
	State   string          `json:"state"`
	Message json.RawMessage `json:"message"`
}

func (w wireStatus) status() Status {
	st := Status{State: normState(w.State), RawState: w.State}
	if len(w.Message) > 0 && string(w.Message) != "null" {
		var m wireMessage
		if json.Unmarshal(w.Message, &m) == nil {
			st.Message = m.message(w.Message)
		}
	}
	return st
}

// Artifact is a task output. ID is the artifactId, or for draft agents
// (which have none) the name or index.
type Artifact struct {
	ID    string
	Name  string
	Parts []Part
}

type wireArtifact struct {
	ArtifactID string            `json:"artifactId"`
	Name       string            `json:"name"`
	Parts      []json.RawMessage `json:"parts"`
	Index      *int              `json:"index"`     // draft
	Append     *bool             `json:"append"`    // draft
	LastChunk  *bool             `json:"lastChunk"` // draft
}

func (w wireArtifact) artifact() Artifact {
	id := w.ArtifactID
	if id == "" && w.Index != nil {
		id = fmt.Sprintf("index-%d", *w.Index)
	}
	if id == "" {
		id = orDefault(w.Name, "artifact")
	}
	return Artifact{ID: id, Name: w.Name, Parts: decodeParts(w.Parts)}
}

// Task is an A2A task: one tai turn.
type Task struct {
	ID        string
	ContextID string
	Status    Status
	Artifacts []Artifact
	Metadata  json.RawMessage
}

type wireTask struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	SessionID string          `json:"sessionId"` // draft
	Status    wireStatus      `json:"status"`
	Artifacts []wireArtifact  `json:"artifacts"`
	Metadata  json.RawMessage `json:"metadata"`
}

func (w wireTask) task() *Task {
	t := &Task{ID: w.ID, ContextID: orDefault(w.ContextID, w.SessionID), Status: w.Status.status(), Metadata: w.Metadata}
	for _, a := range w.Artifacts {
		t.Artifacts = append(t.Artifacts, a.artifact())
	}
	return t
}

// Event kinds, after the 0.x `kind` spellings.
const (
	KindTask     = "task"
	KindMessage  = "message"
	KindStatus   = "status-update"
	KindArtifact = "artifact-update"
	KindUnknown  = "unknown"
)

// Event is one result or stream item, whatever the dialect.
type Event struct {
	Kind    string
	Task    *Task    // KindTask
	Message *Message // KindMessage

	// KindStatus and KindArtifact.
	TaskID    string
	ContextID string
	Status    Status // KindStatus
	Final     bool   // KindStatus: 0.x and draft mark the last event
	Artifact  Artifact
	Append    bool // KindArtifact: concatenate onto the artifact with this ID
	LastChunk bool
	Metadata  json.RawMessage // KindStatus and KindArtifact: the event's

	Raw json.RawMessage
}

type wireUpdate struct {
	TaskID    string          `json:"taskId"`
	ID        string          `json:"id"` // draft
	ContextID string          `json:"contextId"`
	SessionID string          `json:"sessionId"` // draft
	Status    wireStatus      `json:"status"`
	Final     bool            `json:"final"`
	Artifact  *wireArtifact   `json:"artifact"`
	Append    *bool           `json:"append"`
	LastChunk *bool           `json:"lastChunk"`
	Metadata  json.RawMessage `json:"metadata"`
}

// wrappers are 1.0's StreamResponse members.
var wrappers = []struct{ key, kind string }{
	{"task", KindTask}, {"message", KindMessage}, {"statusUpdate", KindStatus}, {"artifactUpdate", KindArtifact},
}

// DecodeEvent decodes one result (a SendMessage answer, a stream item, a
// GetTask or CancelTask answer) in any dialect. It fails only on what is
// not a JSON object; an object it does not recognise is KindUnknown.
func DecodeEvent(raw json.RawMessage) (Event, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Event{}, fmt.Errorf("a2a: result is not a JSON object: %w", err)
	}
	if probe == nil {
		return Event{}, fmt.Errorf("a2a: result is null")
	}
	if k, ok := probe["kind"]; ok {
		var kind string
		_ = json.Unmarshal(k, &kind)
		return decodeKind(kind, raw), nil
	}
	if _, hasID := probe["id"]; !hasID {
		for _, w := range wrappers {
			if inner, ok := probe[w.key]; ok && len(probe) == 1 {
				ev := decodeKind(w.kind, inner)
				ev.Raw = raw
				return ev, nil
			}
		}
	}
	// Bare objects: 1.0's GetTask/CancelTask answers and the draft.
	switch {
	case has(probe, "artifact"):
		return decodeKind(KindArtifact, raw), nil
	case has(probe, "status") && (has(probe, "final") || has(probe, "taskId")):
		return decodeKind(KindStatus, raw), nil
	case has(probe, "status") && has(probe, "id"):
		return decodeKind(KindTask, raw), nil
	case has(probe, "parts") && has(probe, "role"):
		return decodeKind(KindMessage, raw), nil
	}
	return Event{Kind: KindUnknown, Raw: raw}, nil
}

func has(m map[string]json.RawMessage, k string) bool {
	_, ok := m[k]
	return ok
}

func decodeKind(kind string, raw json.RawMessage) Event {
	ev := Event{Kind: kind, Raw: raw}
	switch kind {
	case KindTask:
		var w wireTask
		if json.Unmarshal(raw, &w) != nil {
			return Event{Kind: KindUnknown, Raw: raw}
		}
		ev.Task = w.task()
	case KindMessage:
		var w wireMessage
		if json.Unmarshal(raw, &w) != nil {
			return Event{Kind: KindUnknown, Raw: raw}
		}
		ev.Message = w.message(raw)
	case KindStatus, KindArtifact:
		var w wireUpdate
		if json.Unmarshal(raw, &w) != nil {
			return Event{Kind: KindUnknown, Raw: raw}
		}
		ev.TaskID = orDefault(w.TaskID, w.ID)
		ev.ContextID = orDefault(w.ContextID, w.SessionID)
		ev.Metadata = w.Metadata
		if kind == KindStatus {
			ev.Status, ev.Final = w.Status.status(), w.Final
			break
		}
		if w.Artifact == nil {
			return Event{Kind: KindUnknown, Raw: raw}
		}
		ev.Artifact = w.Artifact.artifact()
		// 0.3/1.0 put append/lastChunk on the event, the draft on the artifact.
		ev.Append = boolOf(w.Append) || boolOf(w.Artifact.Append)
		ev.LastChunk = boolOf(w.LastChunk) || boolOf(w.Artifact.LastChunk)
	default:
		ev.Kind = KindUnknown
	}
	return ev
}

func boolOf(b *bool) bool { return b != nil && *b }

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
