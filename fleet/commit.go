package fleet

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tai-dev/tai/worktree"
)

// Trailers that name, in every commit a fleet makes, the run and the task
// it is the work of: what resume reads in the target's history to know a
// task merged when its state does not say so.
const (
	TrailerRun  = "Tai-Fleet-Run"
	TrailerTask = "Tai-Fleet-Task"
)

// CommitMessage is the message of a task's commit: a subject from the
// task's prompt (its first line, as a commit subject), the agent's last
// message, and the run and task as trailers.
func CommitMessage(run, task, prompt, message string) string {
	subject := Subject(prompt)
	if subject == "" {
		subject = "task " + task
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	if m := strings.TrimSpace(truncate(message, 2000)); m != "" {
		b.WriteString(m + "\n\n")
	}
	fmt.Fprintf(&b, "%s: %s\n%s: %s\n", TrailerRun, run, TrailerTask, task)
	return b.String()
}

// subjectMax is how long a commit subject gets (git's convention).
const subjectMax = 72

// Subject is a prompt's first non-empty line, whitespace collapsed, cut
// at a word to a commit subject's length.
func Subject(prompt string) string {
	line := ""
	sc := bufio.NewScanner(strings.NewReader(prompt))
	for sc.Scan() {
		if line = strings.Join(strings.Fields(sc.Text()), " "); line != "" {
			break
		}
	}
	line = strings.TrimRight(line, ".:")
	if utf8.RuneCountInString(line) <= subjectMax {
		return line
	}
	r := []rune(line)[:subjectMax-1]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > subjectMax/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.") + "…"
}

// mergedTrailers finds, in the target's history since the run's base, the
// tasks of run whose commits are there: task id → the newest such commit.
func mergedTrailers(ctx context.Context, wt *worktree.Manager, run, base, target string) (map[string]string, error) {
	format := fmt.Sprintf("%%H %%(trailers:key=%s,valueonly,separator=%%x2C) %%(trailers:key=%s,valueonly,separator=%%x2C)", TrailerRun, TrailerTask)
	out, err := wt.History(ctx, format, base+".."+"refs/heads/"+target)
	if err != nil {
		return nil, fmt.Errorf("reading %s's history: %w", target, err)
	}
	found := map[string]string{}
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] != run {
			continue
		}
		if _, ok := found[f[2]]; !ok {
			found[f[2]] = f[0]
		}
	}
	return found, nil
}
