// Package secretkit plants credentials of every kind pkg/secrets detects,
// made up at run time from a seed (the repository holds nothing a secret
// scanner would flag), and checks that none of them got out.
package secretkit

import (
	"bytes"
	"math/rand/v2"
	"strings"
)

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upperAN = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567"
	b64url  = alnum + "-_"
)

// Sample is one planted credential: Value is the secret itself, Text the
// phrase that carries it (what a user or a tool would write).
type Sample struct {
	Kind  string // pkg/secrets' wording
	Value string
	Text  string
}

func token(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// Samples returns one credential of every kind, random but reproducible
// from seed.
func Samples(seed uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, seed^0x5ec2e7))
	var out []Sample
	pre := func(kind, prefix string, n int) {
		v := prefix + token(rng, alnum, n)
		out = append(out, Sample{Kind: kind, Value: v, Text: "use " + v + " for it"})
	}
	pre("Anthropic API key", "sk-ant-api03-", 60)
	pre("OpenRouter API key", "sk-or-v1-", 64)
	pre("OpenAI API key", "sk-proj-", 80)
	pre("OpenAI admin key", "sk-admin-", 60)
	pre("Stripe live secret key", "sk_live_", 30)
	pre("Stripe live restricted key", "rk_live_", 30)
	pre("GitHub token", "ghp_", 36)
	pre("GitHub OAuth token", "gho_", 36)
	pre("GitHub user token", "ghu_", 36)
	pre("GitHub app token", "ghs_", 36)
	pre("GitHub refresh token", "ghr_", 36)
	pre("GitHub fine-grained token", "github_pat_", 82)
	pre("GitLab token", "glpat-", 20)
	pre("Slack bot token", "xoxb-", 30)
	pre("Slack user token", "xoxp-", 30)
	pre("Slack token", "xoxa-", 30)
	pre("Slack refresh token", "xoxr-", 30)
	pre("Google API key", "AIza", 35)
	pre("Hugging Face token", "hf_", 34)
	pre("Groq API key", "gsk_", 52)
	pre("xAI API key", "xai-", 80)
	pre("npm token", "npm_", 36)
	pre("API key (sk-…)", "sk-", 48)
	aws := "AKIA" + token(rng, upperAN, 16)
	out = append(out, Sample{Kind: "AWS access key id", Value: aws, Text: "AWS_ACCESS_KEY_ID=" + aws})
	sec := token(rng, alnum, 40)
	out = append(out, Sample{Kind: "AWS secret access key", Value: sec, Text: "AWS_SECRET_ACCESS_KEY=" + sec})
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJ" + token(rng, b64url, 40) + "." + token(rng, b64url, 43)
	out = append(out, Sample{Kind: "JSON Web Token", Value: jwt, Text: "token: " + jwt})
	bearer := token(rng, alnum, 40)
	out = append(out, Sample{Kind: "bearer token", Value: bearer, Text: "curl -H 'Authorization: Bearer " + bearer + "' https://api.example.com"})
	var key strings.Builder
	key.WriteString("-----BEGIN RSA PRIVATE KEY-----\n")
	body := ""
	for range 8 {
		l := token(rng, alnum+"+/", 64)
		body += l
		key.WriteString(l + "\n")
	}
	key.WriteString("-----END RSA PRIVATE KEY-----")
	// The key's material (its lines) is what must not get out.
	out = append(out, Sample{Kind: "private key", Value: body[:64], Text: "deploy key:\n" + key.String() + "\n"})
	return out
}

// Leaks returns the samples whose value occurs in b (a file, an output, a
// request body, an index row). A value is looked for whole and by its
// middle 16 bytes, so a value cut by a cap still counts.
func Leaks(b []byte, samples []Sample) []Sample {
	var out []Sample
	for _, s := range samples {
		mid := s.Value[len(s.Value)/2-8 : len(s.Value)/2+8]
		if bytes.Contains(b, []byte(s.Value)) || bytes.Contains(b, []byte(mid)) {
			out = append(out, s)
		}
	}
	return out
}

// Kinds names the kinds of samples (for messages).
func Kinds(samples []Sample) []string {
	var out []string
	for _, s := range samples {
		out = append(out, s.Kind)
	}
	return out
}
