// Package policy is tai's permission decider: the one place that answers an
// agent's permission and mode-switch requests, whatever driver carried them,
// and records who or what decided and why.
//
// # Precedence
//
// First hit wins:
//
//  1. the built-in deny floor (FloorRules), in every mode; then deny rules;
//  2. a human's remembered "always deny";
//  3. ask rules (answered by a remembered "always allow", the answerer,
//     the human, or --non-interactive);
//  4. allow rules;
//  5. the mode's default: approve-all and yolo allow, deny-all denies,
//     approve-reads allows read, search and think inside the workspace and
//     asks for the rest, ask asks.
//
// Within a level the first matching rule decides, flag rules before file
// rules. No allow rule and no remembered answer can get past the floor or a
// deny rule; a remembered "always allow" only answers asks.
//
// # Provenance
//
// Every decision's decided_by is one of: "rule:<id>" (a user rule; built-in
// floor rules have ids starting with "floor-", e.g. "rule:floor-rm-root"),
// "remembered", "human", "answerer", "default" (the mode), "via:<by>" (a
// tai in front answered, by <by>: see RelayingPrompter), or "cancel" (the
// turn was cancelled, or nobody could be asked under --non-interactive
// fail). Its reason says which rule or mode and why, when and for which
// scope an answer was remembered, and what an ask became.
//
// # Policy file
//
// TOML, not YAML: patterns full of *, :, {, ! and # are plain quoted strings
// in TOML, where in YAML an unquoted *.go is an alias and "no" a boolean;
// and TOML has '...' literal strings for regular expressions. Unknown keys
// are errors ("did you mean"), and every error names the file, the line and
// the rule:
//
//	version = 1
//	mode = "approve-reads"           # approve-all | approve-reads | ask | deny-all | yolo
//	non_interactive = "deny"         # deny | fail: what an ask becomes with no terminal
//	remember = "run"                 # session | run | workspace: how far "always" reaches
//	default_mode = "plan"            # the session's starting mode (tai run --mode overrides)
//	mode_after_plan = "acceptEdits"  # where an approved exit from plan mode goes
//	protected_branches = ["main", "master", "release/*"]
//	write_roots = ["/tmp/scratch"]   # writes there are not "outside the workspace"
//	# floor = false                  # turns the built-in floor off: only here, never by a flag
//	# floor_disable = ["floor-git-force-push"]
//
//	[[rule]]
//	id = "secrets"
//	effect = "deny"
//	kind = ["read", "edit", "delete", "move"]
//	path = ["**/.env", "**/.env.*", "~/.ssh/**"]
//	reason = "secrets stay out of reach"
//
//	[[rule]]
//	id = "push"
//	effect = "ask"
//	command = ["git push*", "gh pr create*", "npm publish*"]
//
//	[[rule]]
//	id = "go-tools"
//	effect = "allow"
//	kind = "execute"
//	command = ["go test *", "go vet *", 're:^gofmt -l( \S+)*$']
//
//	[[rule]]
//	id = "edits"
//	effect = "allow"
//	kind = ["edit", "delete", "move"]
//	path = "**"                      # anywhere inside the workspace
//
//	[[rule]]
//	effect = "ask"                   # id: rule-5
//	kind = "read"
//	outside_workspace = true
//
//	[[rule]]
//	effect = "allow"
//	kind = "switch_mode"
//	mode = ["default", "acceptEdits"]
//
// A rule has an effect (allow, ask, deny), an optional id (rule-N for the
// Nth [[rule]] without one) and reason, and conditions that must all hold,
// each a string or an array of strings of which one must match:
//
//   - kind: read, edit, delete, move, search, execute, think, fetch,
//     switch_mode, other (a kind tai does not know counts as other).
//   - tool: globs on the tool's name (its title when it has none),
//     case-insensitive.
//   - path: globs on every path the request touches (locations, diff paths,
//     raw_input path fields). Relative globs are relative to the workspace
//     and never match a path outside it; "**" spans directories; a glob
//     without "/" matches the base name at any depth (.env is **/.env); a
//     trailing "/" means everything below. Absolute globs and ~/ globs
//     match absolute paths anywhere.
//   - outside_workspace: true (false) requires the paths to be outside
//     (inside) the workspace, after symlinks.
//   - command: patterns on the command line (raw_input command or cmd, a
//     string or an argv array, "sh -c SCRIPT" unwrapped; else the title's
//     `backticked` text). A glob's "*" matches anything and a trailing " *"
//     may match nothing ("go test *" matches "go test"); "re:REGEXP" is an
//     unanchored Go regular expression.
//   - url: globs on a fetch's URL. mode: globs on the mode a switch_mode
//     request moves the session to.
//
// Deny and ask rules match when any path, or any simple command, matches;
// allow rules only when all do. Command lines are read by a shell parser
// (package shell, on mvdan.cc/sh): every simple command of a list, pipeline, subshell, group,
// if/while/for/case and function body counts, and so do the commands of
// $(...), `...`, <(...), of sh -c, eval, su -c and env -S scripts, of
// scripts fed to a shell by a pipe, here-string or heredoc, and the
// commands xargs and find -exec run. sudo, env, nohup, timeout and the
// like are looked through for deny and ask rules. So --allow
// 'execute:go test *' does not allow "go test ./... && rm -rf x", an
// allowed command that redirects output into a file (> out.txt) is not
// allowed either, and no allow rule covers a line that does not parse.
//
// # Limits
//
// limits = {pids = 512, memory = "4GiB"} caps each process tree tai
// launches for an agent (the agent, each command it serves) on its cgroup:
// pids counts processes and threads, memory is bytes or a size with K, M,
// G or T (KiB ... TiB); 0 or "off" is no limit. Left out, each is tai's
// default (sandbox.DefaultLimits: 4096 pids, three quarters of RAM).
//
// # Flags
//
// --allow, --ask and --deny each take one rule (ParseRuleFlag):
//
//	KIND[,KIND...][:PATTERN]   --allow 'execute:go test *'   --deny 'edit,delete:**/.env'
//	tool=NAME                  --ask 'tool=mcp__github__*'
//	*                          --ask '*'
//
// PATTERN is a path glob for read, edit, delete, move and search, a command
// pattern for execute, a URL glob for fetch, a mode for switch_mode and a
// tool name for think and other. Flag rules get ids flag-1, flag-2, ...
//
// # The deny floor
//
// FloorRules lists it: recursive rm (and find -delete, and tree deletions
// in python/perl/ruby/node one-liners) and mv of /, top-level directories,
// home or the workspace root and its parents; the same for chmod/chown -R;
// writes outside the workspace; writes to the policy and memory files;
// forced pushes to (or deletions of) protected branches, and mirror
// pushes, read as git reads them with the repository's config (gitpush.go);
// mkfs, wipefs and partitioners; dd, shred or redirections onto disk
// devices; fork bombs; a download piped or substituted into a shell or an
// interpreter; a command known only when it runs. It applies in every
// mode, yolo and approve-all included, and only the policy file can turn
// it off. A word the parser cannot know before the command runs ($X,
// $(...)) is read at its most dangerous (it may be /, or --mirror, or any
// command), options as getopt_long reads them (rm --rec), paths as the
// kernel walks them (/proc/self/cwd, //dev/sda; floorpaths.go), and a line
// that does not parse is read word by word, every word a possible command.
//
// # Memory
//
// A human's "allow always" or "deny always" is remembered under the
// request's memory key (see Engine.MemoryKey): the exact command line for
// execute, the paths for file kinds, the origin for fetch, the target mode
// for switch_mode, else the tool's name. Scopes: session (the default, one
// Memory per engine), run (one Memory shared by the engines of a fleet run)
// and workspace (OpenWorkspaceMemory: a JSON file under XDG state, outside
// the workspace so agents cannot write it, flock-locked and replaced
// atomically). Engines sharing a Memory also take turns at the terminal,
// so N agents asking the same thing at once are asked once.
package policy
