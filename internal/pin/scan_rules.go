package pin

// The rules of the poisoning scan, each tried only where one of its
// starting words is.

import (
	"regexp"
	"slices"
	"strings"
)

// The rules, read on folded text (lower case, one space). Each is narrow
// on purpose: a tool that says what it does to files ("Read the complete
// contents of a file", "Delete the file at path") is not flagged; text
// that tells the model what to do beyond the tool, or to keep it from the
// user, or names secrets the tool has no business with, is. Their test
// vectors are in docs/security.md and scan_test.go.
var (
	markupRules = []rule{
		{[][]string{{"<", "&lt;"}, {"important", "system", "instruction", "admin", "critical", "secret", "hidden", "override", "assistant", "sudo"}},
			l("<", "&lt;"),
			regexp.MustCompile(`(<|&lt;)/?\s*(important|system|instructions?|admin|critical|secret|hidden|override|assistant|sudo)(\s+[a-z_-]+\s*=[^<>]{0,80})?\s*/?(>|&gt;)`), nil, nil},
		{[][]string{{"[inst]", "[/inst]", "<|"}}, l("[", "<|"),
			regexp.MustCompile(`\[/?inst\]|<\|im_start\|>|<\|system\|>`), nil, nil},
	}
	instructionRules = []rule{
		// Override the model's instructions.
		{[][]string{{"ignore", "disregard", "forget", "override", "bypass"}, {"instruction", "prompt", "rules", "direction", "directive", "guideline", "message"}},
			w("ignore", "disregard", "forget", "override", "bypass"),
			regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass) (all |any |every |the )?(of )?(your |the )?(previous|prior|earlier|above|preceding|other|original|system|existing) (\w+ )?(instructions?|prompts?|rules|directions|directives|guidelines|messages)\b`), nil, nil},
		{[][]string{{"instructions:", "instruction:"}}, w("new", "updated", "real", "actual"),
			regexp.MustCompile(`\b(new|updated|real|actual) (system )?instructions?:`), nil, nil},
		// Keep it from the user.
		{[][]string{userGroup, {"tell", "inform", "mention", "notify", "reveal", "alert", "show"}, {"not ", "never", "without", "n't", "dont"}},
			w("do not", "don't", "dont", "never", "without"),
			regexp.MustCompile(`\b(do not|don't|dont|never|without) (\w+ ){0,3}(tell|telling|inform|informing|mention|mentioning|notify|notifying|reveal|revealing|alert|alerting|show|showing)( it| this| that| anything)? (to )?the (user|human)\b`), nil, nil},
		{[][]string{userGroup, {"let"}, {"know", "see", "notice"}},
			w("do not", "don't", "dont", "never"),
			regexp.MustCompile(`\b(do not|don't|dont|never) let the (user|human) (know|see|notice)\b`), nil, nil},
		{[][]string{userGroup, {"hide", "conceal", "keep"}, {"from"}},
			w("hide", "conceal", "keep"),
			regexp.MustCompile(`\b(hide|conceal|keep) (\w+ ){0,4}(from|secret from) the (user|human)\b`), nil, nil},
		{[][]string{userGroup, {" not "}, {"know", "see", "notice", "told"}},
			w("the user", "the human"),
			regexp.MustCompile(`\bthe (user|human) (must|should|need) not (know|see|notice|be told)\b`), nil, nil},
		{[][]string{userGroup, {"without", "before"}, {"knowing", "noticing", "knowledge", "consent", "approval"}},
			w("without", "before"),
			regexp.MustCompile(`\b(without|before) (the )?(user|human)('s)? (knowing|noticing|knowledge|consent|approval)\b`), nil, nil},
		// Files and secrets no tool description has business naming.
		{[][]string{{".ssh", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".aws/credentials", "/etc/shadow", ".netrc", ".pgpass", ".docker/config", ".kube/config", ".git-credentials"}},
			append(l("~/.ssh", "/.ssh/", ".aws/credentials", "/etc/shadow", ".netrc", ".pgpass", ".docker/config.json", ".kube/config", ".git-credentials"), w("id_")...),
			regexp.MustCompile(`~/\.ssh\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|/\.ssh/|\.aws/credentials|/etc/shadow\b|\.netrc\b|\.pgpass\b|\.docker/config\.json|\.kube/config\b|\.git-credentials\b`), nil, nil},
		{[][]string{{"/.cursor/", "/.claude/", "/.codeium/", "/.vscode/", "mcp.json", "claude_desktop_config"}},
			append(l("~/.", "$home/.", "%userprofile%/.", "claude_desktop_config.json"), w("mcp.json")...),
			regexp.MustCompile(`(~|\$home|%userprofile%)/\.(cursor|claude|codeium|vscode)/|\bmcp\.json\b|claude_desktop_config\.json`), nil, nil},
		{[][]string{{"read", "send", "pass", "include", "upload", "post", "forward", "exfiltrate", "leak", "append", "attach", "copy"},
			{"private key", "ssh key", "api keys", "passwords", "secrets", "credentials", "session cookies", "environment variables", "env vars", ".env file"}},
			w("read", "send", "pass", "include", "upload", "post", "forward", "exfiltrate", "leak", "append", "attach", "copy"),
			regexp.MustCompile(`\b(read|send|pass|include|upload|post|forward|exfiltrate|leak|append|attach|copy) (\w+ ){0,5}(the )?(user's |users' |their |all )?(private keys?|ssh keys?|api keys|passwords|secrets|credentials|session cookies|environment variables|env vars|\.env file)\b`), nil, nil},
	}
)

// userGroup is the trigger group of every rule about the user.
var userGroup = []string{"user", "human"}

// rule is one pattern, tried only on a text that holds, for each group of
// its triggers, one of the group (plain substring searches: most
// descriptions hold none, and a regular expression costs far more than a
// search).
type rule struct {
	triggers [][]string
	// starts are the literals every match begins with (word: at a word's
	// start): the pattern is tried only where one is, anchored there
	// (at), on the rest of the text: an anchored match ends where the
	// pattern can no longer match (a few words on), so the rest costs
	// what the match reads, and no padding (a word of 2 KiB) hides one.
	starts []start
	re     *regexp.Regexp
	at     *regexp.Regexp // re anchored at its start
	// groups are triggers as sets of triggerWords (one per group, made
	// by init): armedBy reads them from one pass over a text.
	groups []triggerSet
}

type start struct {
	lit  string
	word bool
}

func l(lits ...string) []start {
	out := make([]start, len(lits))
	for i, t := range lits {
		out[i] = start{lit: t}
	}
	return out
}

func w(lits ...string) []start {
	out := l(lits...)
	for i := range out {
		out[i].word = true
	}
	return out
}

func init() {
	index := map[string]int{}
	for _, rules := range [][]rule{markupRules, instructionRules} {
		for i := range rules {
			rules[i].at = regexp.MustCompile(`^(?:` + rules[i].re.String() + `)`)
			for _, g := range rules[i].triggers {
				var set triggerSet
				for _, t := range g {
					n, ok := index[t]
					if !ok {
						n = len(triggerWords)
						if n >= len(set)*64 || t == "" {
							panic("pin: too many trigger words, or an empty one")
						}
						index[t] = n
						triggerWords = append(triggerWords, t)
						c := candidate{n: uint8(n)}
						if len(t) == 1 {
							single[t[0]] = true
						} else {
							c.second = t[1]
							p := uint16(t[0])<<8 | uint16(t[1])
							pairs[p>>6] |= 1 << (p & 63)
						}
						byFirst[t[0]] = append(byFirst[t[0]], c)
					}
					set[n>>6] |= 1 << (n & 63)
				}
				rules[i].groups = append(rules[i].groups, set)
			}
		}
	}
}

// The trigger words of every rule, found in a text in one pass
// (triggersIn) rather than each searched for in turn: pairs holds the
// first two bytes of each of two bytes or more, single the words of one
// byte, byFirst each word by its first byte.
var (
	triggerWords []string
	pairs        [1 << 16 / 64]uint64
	single       [256]bool
	byFirst      [256][]candidate
)

// candidate is a trigger word's index and its second byte (0: a word of
// one byte), compared before the word is.
type candidate struct {
	second byte
	n      uint8
}

// triggerSet is a set of triggerWords, by index.
type triggerSet [2]uint64

// triggersIn is the set of trigger words s holds (anywhere, as
// strings.Contains finds them).
func triggersIn(s []byte) triggerSet {
	var set triggerSet
	for i, c := range s {
		if i+1 < len(s) {
			p := uint16(c)<<8 | uint16(s[i+1])
			if pairs[p>>6]&(1<<(p&63)) == 0 && !single[c] {
				continue
			}
		} else if !single[c] {
			continue
		}
		var next byte
		if i+1 < len(s) {
			next = s[i+1]
		}
		for _, k := range byFirst[c] {
			// The second byte first: few of a first byte's words share
			// it, and a compare costs more than the byte.
			if k.second != next && k.second != 0 {
				continue
			}
			if t := triggerWords[k.n]; len(t) <= len(s)-i && string(s[i:i+len(t)]) == t {
				set[k.n>>6] |= 1 << (k.n & 63)
			}
		}
	}
	return set
}

// armedBy reports whether found (triggersIn of a text) holds one trigger
// of each of r's groups: r.armed of that text.
func (r *rule) armedBy(found triggerSet) bool {
	for _, g := range r.groups {
		if g[0]&found[0] == 0 && g[1]&found[1] == 0 {
			return false
		}
	}
	return true
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// armed reports whether lower (a text in lower case) holds one trigger of
// each of r's groups.
func (r rule) armed(lower string) bool {
	for _, group := range r.triggers {
		if !slices.ContainsFunc(group, func(t string) bool { return strings.Contains(lower, t) }) {
			return false
		}
	}
	return true
}

// find is the leftmost match of r in s (folded text, armed for r), or
// nil: the pattern tried anchored at each place one of its starts is, in
// order.
func (r rule) find(s string) []int {
	for from := 0; from < len(s); {
		pos := -1
		for _, st := range r.starts {
			for off := from; off < len(s); {
				i := strings.Index(s[off:], st.lit)
				if i < 0 {
					break
				}
				i += off
				if st.word && i > 0 && wordByte(s[i-1]) {
					off = i + 1
					continue
				}
				if pos < 0 || i < pos {
					pos = i
				}
				break
			}
		}
		if pos < 0 {
			return nil
		}
		if loc := r.at.FindStringIndex(s[pos:]); loc != nil {
			return []int{pos + loc[0], pos + loc[1]}
		}
		from = pos + 1
	}
	return nil
}
