package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/app"
	"github.com/tai-dev/tai/exitcode"
)

// outputFlag is -o/--output text|json, with --json kept as an alias, on
// every command that prints data.
type outputFlag struct {
	output string
	json   bool
}

func (o *outputFlag) add(c *cobra.Command) {
	c.Flags().StringVarP(&o.output, "output", "o", app.OutputText, "output: text | json")
	c.Flags().BoolVar(&o.json, "json", false, "print JSON (same as -o json)")
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{app.OutputText, app.OutputJSON}, cobra.ShellCompDirectiveNoFileComp))
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		switch o.output {
		case app.OutputText, app.OutputJSON:
		default:
			return code(app.Report(cmd.ErrOrStderr(), exitcode.With(exitcode.Usage, fmt.Errorf("--output must be text or json, not %q", o.output))))
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

// value is "json" when -o json or --json was given.
func (o *outputFlag) value() string {
	if o.json {
		return app.OutputJSON
	}
	return o.output
}

// asJSON is value() == json.
func (o *outputFlag) asJSON() bool { return o.value() == app.OutputJSON }
