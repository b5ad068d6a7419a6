package registry

import "fmt"

// ExpandClientSecret returns the oauth client_secret with ${NAME} replaced by
// getenv(NAME) and $$ by a literal $, as in env. A variable that getenv does
// not know is an error naming it (*MissingVarError), never an empty secret;
// the error never holds the value.
func (o *OAuth) ExpandClientSecret(getenv func(string) (string, bool)) (string, error) {
	v, err := expand(o.ClientSecret, getenv)
	if err != nil {
		return "", fmt.Errorf("oauth client_secret: %w", err)
	}
	return v, nil
}
