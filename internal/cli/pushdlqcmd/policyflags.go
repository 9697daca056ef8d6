package pushdlqcmd

import (
	"fmt"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// policyFlags are the --window and --codes a verb was given, read one way
// by replay, trace and processor arm: each required unless the policy has
// another source, warned about when a code is not in the table, and
// checked against the guardrails (the window's order, and '*' over 24
// hours only with AllowWideWindow).
type policyFlags struct {
	Window, Codes   string
	AllowWideWindow bool
	// Or names the policy's other source ("--from-env"), for the error
	// when a flag is missing; OrGiven says it was given: the policy holds
	// its window and codes already, the flags only override them, and
	// neither is required.
	Or      string
	OrGiven bool
}

// policy is the policy the flags alone give, both required.
func (pf policyFlags) policy(f *Factory) (pushpolicy.Policy, error) {
	var p pushpolicy.Policy
	return p, pf.apply(f, &p)
}

// apply sets p's window and codes from the flags and checks the result.
func (pf policyFlags) apply(f *Factory, p *pushpolicy.Policy) error {
	or := ""
	if pf.Or != "" {
		or = " (or " + pf.Or + ")"
	}
	if pf.Window != "" {
		s, e, err := pushpolicy.ParseWindow(pf.Window)
		if err != nil {
			return cmdutil.UsageErrorf("--window: %v", err)
		}
		p.Start, p.End = s, e
	} else if !pf.OrGiven {
		return cmdutil.UsageErrorf("--window%s is required", or)
	}
	if pf.Codes != "" {
		all, list, err := pushpolicy.ParseCodes(pf.Codes)
		if err != nil {
			return cmdutil.UsageErrorf("--codes: %v", err)
		}
		p.AllCodes, p.Codes = all, list
	} else if !pf.OrGiven {
		return cmdutil.UsageErrorf("--codes%s is required", or)
	}
	if unknown := pushpolicy.UnknownCodes(p.Codes); len(unknown) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "warning: error code %s: not in the push error code table (known: %s); check for a typo\n",
			joinInts(unknown), knownCodes())
	}
	if err := p.Validate(pf.AllowWideWindow); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	return nil
}
