package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	qrcode "github.com/skip2/go-qrcode"
	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/secretenv"
	"github.com/tai-dev/tai/web"
)

// DefaultServeAddr is where tai serve listens by default: loopback only.
const DefaultServeAddr = "127.0.0.1:7788"

// ServeFlags are `tai serve`'s flags (and tai hub --serve's).
type ServeFlags struct {
	Listen     string
	TLSCert    string
	TLSKey     string
	SelfSigned bool
	Verbose    bool
}

func (f *ServeFlags) addTLSFlags(c *cobra.Command) {
	c.Flags().StringVar(&f.TLSCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	c.Flags().StringVar(&f.TLSKey, "tls-key", "", "the certificate's private key (PEM)")
	c.Flags().BoolVar(&f.SelfSigned, "tls-self-signed", false, "serve HTTPS with a certificate made at start (its fingerprint is printed: check it in the browser)")
}

// NewCmdServe is `tai serve`.
func NewCmdServe(std IO, g *Globals) *cobra.Command {
	var f ServeFlags
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve a web page, for any browser or a phone, to watch and answer every tai on this machine",
		Long: "Serve one small web page (and the JSON behind it, cap.md §7) listing every live run and fleet task on this\n" +
			"machine, what waits for you first (permission asks, questions, forms), to answer, follow a transcript or cancel.\n" +
			"Loopback only unless --listen names another address. Every request needs your token: open the link printed\n" +
			"once (or scan its QR code), a cookie keeps it. The token is kept where no agent's sandbox can read it.",
		Example: "  tai serve\n  tai serve --listen 0.0.0.0:7788 --tls-self-signed   # from a phone on the same network",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Verbose = g.Verbose
			return Serve(cmd.Context(), f, std)
		},
	}
	c.Flags().StringVar(&f.Listen, "listen", DefaultServeAddr, "address to serve on (port 0: a free one)")
	f.addTLSFlags(c)
	return c
}

// Serve runs `tai serve` until ctx ends.
func Serve(ctx context.Context, f ServeFlags, std IO) error {
	logger := newLogger(std.Err, f.Verbose)
	stop, err := startWeb(ctx, f, nil, logger, std)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	return nil
}

// startWeb serves the page until stop: the token (made and kept on first
// use), the listener, TLS, the link and QR code on stderr, and the page's
// address for the runs' notifications.
func startWeb(ctx context.Context, f ServeFlags, remoteRuns func(context.Context) ([]feed.State, error), logger *slog.Logger, std IO) (stop func(), err error) {
	if (f.TLSCert == "") != (f.TLSKey == "") {
		return nil, exitcode.Usagef("serve: --tls-cert and --tls-key go together")
	}
	if f.SelfSigned && f.TLSCert != "" {
		return nil, exitcode.Usagef("serve: --tls-self-signed or --tls-cert, not both")
	}
	if f.Listen == "" {
		f.Listen = DefaultServeAddr
	}
	var tlsConf *tls.Config
	var fp string
	switch {
	case f.TLSCert != "":
		cert, err := tls.LoadX509KeyPair(f.TLSCert, f.TLSKey)
		if err != nil {
			return nil, exitcode.With(exitcode.Usage, fmt.Errorf("serve: %w", err))
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	case f.SelfSigned:
		cert, sum, err := web.SelfSigned(web.Hosts(f.Listen), time.Now())
		if err != nil {
			return nil, err
		}
		tlsConf, fp = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, sum
	}
	tok, err := web.Token(web.TokenFile())
	if err != nil {
		return nil, exitcode.With(exitcode.AgentError, fmt.Errorf("serve: %w", err))
	}
	_ = secretenv.HideProcess() // the token is in memory: no agent reads /proc/TAI/mem
	// tai serve's own log: the requests it refused.
	log, err := audit.Open(audit.DefaultPath("web"), audit.Options{Run: "web", Logger: logger})
	if err != nil {
		logger.Warn("serve: no audit log of refused requests", "err", err)
		log = nil
	}
	srv, err := web.New(web.Options{Token: tok, Audit: log, Logger: logger, Remote: remoteRuns})
	if err != nil {
		closeLog(log, logger)
		return nil, err
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		closeLog(log, logger)
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("serve: --listen: %w", err))
	}
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
		ln = tls.NewListener(ln, tlsConf)
	}
	base := scheme + "://" + publicAddr(ln.Addr().String())
	hs := &http.Server{Handler: srv, ConnContext: srv.ConnContext, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("serve", "err", err)
		}
	}()
	if err := writeWebURL(base); err != nil {
		logger.Warn("serve: notifications will carry no link to the page", "err", err)
	}
	link := base + "/?token=" + tok
	fmt.Fprintf(std.Err, "tai serve: the page is on %s\n", base)
	if fp != "" {
		fmt.Fprintf(std.Err, "tai serve: its self-signed certificate's SHA-256 fingerprint is %s\n", fp)
	}
	if !isLoopback(f.Listen) && tlsConf == nil {
		fmt.Fprintln(std.Err, "tai serve: WARNING: not loopback and no TLS: your token and your agents' asks cross the network in clear (add --tls-self-signed)")
	}
	fmt.Fprintf(std.Err, "tai serve: open %s once (it holds your token; a cookie keeps it)\n", link)
	if std.ErrTTY() {
		if q, err := qrcode.New(link, qrcode.Low); err == nil {
			fmt.Fprint(std.Err, q.ToSmallString(false))
		}
	}
	return func() {
		removeWebURL(base)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		<-done
		closeLog(log, logger)
	}, nil
}

func closeLog(log *audit.Log, logger *slog.Logger) {
	if log == nil {
		return
	}
	if err := log.Close(); err != nil {
		logger.Warn("serve: closing the audit log", "err", err)
	}
}

// publicAddr is how a browser reaches addr: an unspecified host (0.0.0.0,
// ::) becomes this host's name.
func publicAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	return net.JoinHostPort(host, port)
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// writeWebURL says where the page is (web.URLFile), for the runs'
// notifications to link to their asks.
func writeWebURL(base string) error {
	tmp := web.URLFile() + ".tmp"
	if err := os.WriteFile(tmp, []byte(base+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, web.URLFile())
}

// removeWebURL removes web.URLFile if it is still this page's.
func removeWebURL(base string) {
	if b, err := os.ReadFile(web.URLFile()); err == nil && strings.TrimSpace(string(b)) == base {
		_ = os.Remove(web.URLFile())
	}
}
