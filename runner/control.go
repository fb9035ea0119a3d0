package runner

import "context"

// Live is a live session handed to Options.OnSession, for a front end
// that changes it between and during turns (an editor over ACP): its mode
// changes are the user's, so the mode guard expects them. It follows the
// run's session: an agent relaunched after a limit is handed on in place.
type Live struct {
	r *run
}

// Session is the live session.
func (c Live) Session() Session { return c.r.live() }

// SetMode switches the session's mode as the user asked.
func (c Live) SetMode(ctx context.Context, mode string) error {
	if err := checkMode(mode, c.r.col.availableModes()); err != nil {
		return err
	}
	sess := c.r.live()
	if c.r.modes != nil {
		c.r.modes.expect(sess.ID(), mode)
	}
	return sess.SetMode(ctx, mode)
}

// SetConfigOption sets a config option as the user asked.
func (c Live) SetConfigOption(ctx context.Context, id, value string) error {
	return c.r.live().SetConfigOption(ctx, id, value)
}
