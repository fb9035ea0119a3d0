package app

import (
	"log/slog"
	"reflect"
)

// logValue logs what a pointer points to (exit_code=0, not exit_code=0xc000…):
// optional fields are pointers, and a log line is for reading. A nil
// pointer logs as "none".
func logValue(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindAny {
		return a
	}
	v := reflect.ValueOf(a.Value.Any())
	if v.Kind() != reflect.Pointer {
		return a
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return slog.String(a.Key, "none")
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		return a // a struct's pointer prints its fields already (&{…})
	}
	return slog.Any(a.Key, v.Interface())
}
