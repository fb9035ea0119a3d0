package modelserver

import (
	"net/http"
	"strings"
)

// Model lists. /v1/models serves one body that both the OpenAI shape
// (object, created, owned_by) and the Anthropic shape (type, display_name,
// created_at, has_more) can read; /v1beta/models serves Gemini's shape.

// modelsCreated is a fixed timestamp so listings are deterministic.
const (
	modelsCreated   = 1735689600 // 2025-01-01T00:00:00Z
	modelsCreatedAt = "2025-01-01T00:00:00Z"
)

func (s *Server) models() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script.Models) > 0 {
		return s.script.Models
	}
	return DefaultModels
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request, path string) {
	gemini := strings.HasPrefix(path, "/v1beta/") || strings.HasPrefix(path, "/v1alpha/")
	names := s.models()
	if i := strings.Index(path, "/models/"); i >= 0 {
		// Every model exists: agents probe the one they are configured with.
		id := path[i+len("/models/"):]
		if gemini {
			writeJSON(w, http.StatusOK, geminiModel(id))
		} else {
			writeJSON(w, http.StatusOK, openAIModel(id))
		}
		return
	}
	var data []any
	for _, n := range names {
		if gemini {
			data = append(data, geminiModel(n))
		} else {
			data = append(data, openAIModel(n))
		}
	}
	if gemini {
		writeJSON(w, http.StatusOK, obj("models", data))
		return
	}
	writeJSON(w, http.StatusOK, obj("object", "list", "data", data, "has_more", false,
		"first_id", names[0], "last_id", names[len(names)-1]))
}

func openAIModel(id string) *object {
	return obj("id", id, "object", "model", "type", "model", "display_name", id,
		"created", modelsCreated, "created_at", modelsCreatedAt, "owned_by", "tai")
}

func geminiModel(id string) *object {
	return obj("name", "models/"+id, "baseModelId", id, "version", "001", "displayName", id,
		"inputTokenLimit", 1048576, "outputTokenLimit", 65536,
		"supportedGenerationMethods", []any{"generateContent", "streamGenerateContent", "countTokens"},
		"thinking", true)
}
