package audit

import "io"

// Setup opens the audit log at logPath (none when "") and reads the key of
// its digests from keyFile (none when ""; arguments are then digested with
// plain SHA-256), as colibri's --audit-log and --audit-key-file ask. What
// the operator should know (a key file without a log, a log without a key,
// a file others may read) is in warnings, to log; an error means colibri
// must not run: running unaudited would be the silent failure an audit log
// exists to prevent. w is nil when there is no log. The key, when there is
// one, also keys the log's chain (opts.Key is set from it).
func Setup(logPath, keyFile string, stderr io.Writer, opts Options) (w *Writer, d *Digester, warnings []string, err error) {
	if logPath == "" {
		if keyFile != "" {
			warnings = append(warnings, "--audit-key-file / COLIBRI_MCP_AUDIT_KEY_FILE is set but there is no audit log (--audit-log / COLIBRI_MCP_AUDIT_LOG): it is unused")
		}
		return nil, nil, warnings, nil
	}
	var key []byte
	if keyFile != "" {
		var warning string
		if key, warning, err = LoadKey(keyFile); err != nil {
			return nil, nil, nil, err
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
	} else {
		warnings = append(warnings, "audit log: no --audit-key-file (COLIBRI_MCP_AUDIT_KEY_FILE): arguments are digested with plain SHA-256, "+
			"so whoever reads the log can test guesses of short or predictable arguments against it; give a key file for an HMAC")
	}
	opts.Key = key
	if w, err = OpenWith(logPath, stderr, opts); err != nil {
		return nil, nil, warnings, err
	}
	if warning := w.Warning(); warning != "" {
		warnings = append(warnings, warning)
	}
	return w, NewDigester(key), warnings, nil
}
