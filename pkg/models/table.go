package models

// table is the built-in model table. Values follow pi's model table
// (@mariozechner/pi-ai 0.73.1, models.generated.js, the vendor's own API entry)
// where pi has the model, so that utilization agrees with pi's and OpenClaw's
// compaction thresholds; otherwise the vendor's documented limits. Ids are the
// vendor's API ids without date suffixes (matching strips dates, provider
// prefixes and ":tag" / "@version" suffixes, and treats "." and "-" alike).
// Hosts that serve an open model with a smaller window get a
// "host/vendor/model" entry; exact ids win over prefixes.
var table = []Model{
	// Anthropic. Sonnet 4 / 4.5 have a 1M-token beta (header context-1m-2025-08-07):
	// opt in with the "[1m]" suffix (Claude Code's spelling) or an override.
	{ID: "claude-3-haiku", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 4096},
	{ID: "claude-3-sonnet", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 4096},
	{ID: "claude-3-opus", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 4096},
	{ID: "claude-3-5-haiku", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 8192},
	{ID: "claude-3-5-sonnet", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 8192},
	{ID: "claude-3-7-sonnet", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 64000},
	{ID: "claude-sonnet-4", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 64000, LongContextWindow: 1000000, Aliases: []string{"claude-sonnet-4-0", "claude-4-sonnet"}},
	{ID: "claude-opus-4", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 32000, Aliases: []string{"claude-opus-4-0", "claude-4-opus"}},
	{ID: "claude-opus-4-1", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 32000},
	{ID: "claude-sonnet-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 64000, LongContextWindow: 1000000},
	{ID: "claude-haiku-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 64000},
	{ID: "claude-opus-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutputTokens: 64000},
	{ID: "claude-opus-4-6", Provider: "anthropic", ContextWindow: 1000000, MaxOutputTokens: 128000},
	{ID: "claude-sonnet-4-6", Provider: "anthropic", ContextWindow: 1000000, MaxOutputTokens: 64000},
	{ID: "claude-opus-4-7", Provider: "anthropic", ContextWindow: 1000000, MaxOutputTokens: 128000},

	// OpenAI
	{ID: "gpt-3.5-turbo", Provider: "openai", ContextWindow: 16385, MaxOutputTokens: 4096},
	{ID: "gpt-4", Provider: "openai", ContextWindow: 8192, MaxOutputTokens: 8192},
	{ID: "gpt-4-32k", Provider: "openai", ContextWindow: 32768, MaxOutputTokens: 8192},
	{ID: "gpt-4-turbo", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 4096, Aliases: []string{"gpt-4-turbo-preview", "gpt-4-1106-preview", "gpt-4-0125-preview", "gpt-4-vision-preview"}},
	{ID: "gpt-4o", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 16384, Aliases: []string{"chatgpt-4o-latest"}},
	{ID: "gpt-4o-mini", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 16384},
	{ID: "gpt-4.1", Provider: "openai", ContextWindow: 1047576, MaxOutputTokens: 32768},
	{ID: "gpt-4.1-mini", Provider: "openai", ContextWindow: 1047576, MaxOutputTokens: 32768},
	{ID: "gpt-4.1-nano", Provider: "openai", ContextWindow: 1047576, MaxOutputTokens: 32768},
	{ID: "gpt-4.5", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 16384},
	{ID: "o1", Provider: "openai", ContextWindow: 200000, MaxOutputTokens: 100000},
	{ID: "o1-mini", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 65536},
	{ID: "o1-preview", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 32768},
	{ID: "o1-pro", Provider: "openai", ContextWindow: 200000, MaxOutputTokens: 100000},
	{ID: "o3", Provider: "openai", ContextWindow: 200000, MaxOutputTokens: 100000},
	{ID: "o3-mini", Provider: "openai", ContextWindow: 200000, MaxOutputTokens: 100000},
	{ID: "o3-pro", Provider: "openai", ContextWindow: 200000, MaxOutputTokens: 100000},
	{ID: "o4-mini", Provider: "openai", ContextWindow: 200000, MaxOutputTokens: 100000},
	{ID: "gpt-5", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5-mini", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5-nano", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5-codex", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5-pro", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 272000},
	{ID: "gpt-5-chat", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 16384},
	{ID: "gpt-5.1", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5.1-codex", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5.1-codex-mini", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5.1-codex-max", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5.1-chat", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 16384},
	{ID: "gpt-5.2", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5.2-codex", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5.2-pro", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-5.2-chat", Provider: "openai", ContextWindow: 128000, MaxOutputTokens: 16384},
	{ID: "gpt-5.3-codex", Provider: "openai", ContextWindow: 400000, MaxOutputTokens: 128000},
	{ID: "gpt-oss-120b", Provider: "openai", ContextWindow: 131072, MaxOutputTokens: 32768},
	{ID: "gpt-oss-20b", Provider: "openai", ContextWindow: 131072, MaxOutputTokens: 32768},

	// Google
	{ID: "gemini-1.5-pro", Provider: "google", ContextWindow: 2097152, MaxOutputTokens: 8192},
	{ID: "gemini-1.5-flash", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 8192},
	{ID: "gemini-2.0-flash", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 8192},
	{ID: "gemini-2.0-flash-lite", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 8192},
	{ID: "gemini-2.5-pro", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 65536},
	{ID: "gemini-2.5-flash", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 65536, Aliases: []string{"gemini-flash"}},
	{ID: "gemini-2.5-flash-lite", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 65536, Aliases: []string{"gemini-flash-lite"}},
	{ID: "gemini-3-pro", Provider: "google", ContextWindow: 1000000, MaxOutputTokens: 64000},
	{ID: "gemini-3-flash", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 65536},
	{ID: "gemini-3.1-pro", Provider: "google", ContextWindow: 1048576, MaxOutputTokens: 65536},
	{ID: "gemma-3", Provider: "google", ContextWindow: 131072, MaxOutputTokens: 8192},

	// Meta Llama (vendor windows; many hosts serve less, see host entries)
	{ID: "llama-3", Provider: "meta", ContextWindow: 8192, Aliases: []string{"llama3", "meta-llama-3"}},
	{ID: "llama-3.1", Provider: "meta", ContextWindow: 128000, Aliases: []string{"llama3.1", "meta-llama-3.1"}},
	{ID: "llama-3.2", Provider: "meta", ContextWindow: 128000, Aliases: []string{"llama3.2", "meta-llama-3.2"}},
	{ID: "llama-3.3", Provider: "meta", ContextWindow: 128000, Aliases: []string{"llama3.3", "meta-llama-3.3"}},
	{ID: "llama-4-scout", Provider: "meta", ContextWindow: 10000000, Aliases: []string{"llama4-scout"}},
	{ID: "llama-4-maverick", Provider: "meta", ContextWindow: 1000000, Aliases: []string{"llama4-maverick"}},
	{ID: "groq/llama-3.1-8b-instant", Provider: "meta", ContextWindow: 131072, MaxOutputTokens: 131072},
	{ID: "groq/llama-3.3-70b-versatile", Provider: "meta", ContextWindow: 131072, MaxOutputTokens: 32768},
	{ID: "cerebras/llama3.1-8b", Provider: "meta", ContextWindow: 32000, MaxOutputTokens: 8000},

	// Qwen: native windows; hosts enabling YaRN serve 131072 (set an override).
	{ID: "qwen2.5", Provider: "qwen", ContextWindow: 32768, Aliases: []string{"qwen-2.5", "qwen2.5-coder"}},
	{ID: "qwen2.5-turbo", Provider: "qwen", ContextWindow: 1000000},
	{ID: "qwen3", Provider: "qwen", ContextWindow: 32768, Aliases: []string{"qwen-3"}},
	{ID: "qwen3-coder", Provider: "qwen", ContextWindow: 262144, MaxOutputTokens: 65536},
	{ID: "qwen3-235b-a22b-2507", Provider: "qwen", ContextWindow: 262144, Aliases: []string{"qwen3-235b-a22b-instruct-2507", "qwen3-235b-a22b-thinking-2507"}},
	{ID: "qwen3-next", Provider: "qwen", ContextWindow: 262144},
	{ID: "qwen3-max", Provider: "qwen", ContextWindow: 262144, MaxOutputTokens: 32768},
	{ID: "qwq", Provider: "qwen", ContextWindow: 131072},

	// DeepSeek (their API: 128K; some hosts serve 64K or 160K)
	{ID: "deepseek-v3", Provider: "deepseek", ContextWindow: 128000, MaxOutputTokens: 8192, Aliases: []string{"deepseek-chat"}},
	{ID: "deepseek-r1", Provider: "deepseek", ContextWindow: 128000, MaxOutputTokens: 32768, Aliases: []string{"deepseek-reasoner"}},
	{ID: "deepseek-v4", Provider: "deepseek", ContextWindow: 1000000, MaxOutputTokens: 384000},
	{ID: "openrouter/deepseek/deepseek-r1", Provider: "deepseek", ContextWindow: 64000, MaxOutputTokens: 16000},

	// Mistral
	{ID: "mistral-large", Provider: "mistral", ContextWindow: 128000},
	{ID: "mistral-medium", Provider: "mistral", ContextWindow: 128000},
	{ID: "mistral-small", Provider: "mistral", ContextWindow: 128000},
	{ID: "mistral-nemo", Provider: "mistral", ContextWindow: 128000, Aliases: []string{"open-mistral-nemo"}},
	{ID: "mistral-7b", Provider: "mistral", ContextWindow: 32768, Aliases: []string{"open-mistral-7b"}},
	{ID: "mixtral-8x7b", Provider: "mistral", ContextWindow: 32768, Aliases: []string{"open-mixtral-8x7b"}},
	{ID: "mixtral-8x22b", Provider: "mistral", ContextWindow: 65536, Aliases: []string{"open-mixtral-8x22b"}},
	{ID: "codestral", Provider: "mistral", ContextWindow: 256000},
	{ID: "devstral", Provider: "mistral", ContextWindow: 128000},
	{ID: "magistral", Provider: "mistral", ContextWindow: 128000},
	{ID: "ministral", Provider: "mistral", ContextWindow: 128000},

	// Others common in pi / OpenClaw setups
	{ID: "kimi-k2", Provider: "moonshotai", ContextWindow: 131072, MaxOutputTokens: 16384},
	{ID: "kimi-k2-0905", Provider: "moonshotai", ContextWindow: 262144, MaxOutputTokens: 262144},
	{ID: "kimi-k2-thinking", Provider: "moonshotai", ContextWindow: 262144, MaxOutputTokens: 262144},
	{ID: "kimi-k2.5", Provider: "moonshotai", ContextWindow: 262144, MaxOutputTokens: 262144},
	{ID: "glm-4.5", Provider: "zai", ContextWindow: 131072, MaxOutputTokens: 98304},
	{ID: "glm-4.6", Provider: "zai", ContextWindow: 204800, MaxOutputTokens: 131072},
	{ID: "glm-4.7", Provider: "zai", ContextWindow: 204800, MaxOutputTokens: 131072},
	{ID: "glm-5", Provider: "zai", ContextWindow: 204800, MaxOutputTokens: 131072},
	{ID: "grok-2", Provider: "xai", ContextWindow: 131072, MaxOutputTokens: 8192},
	{ID: "grok-3", Provider: "xai", ContextWindow: 131072, MaxOutputTokens: 8192},
	{ID: "grok-4", Provider: "xai", ContextWindow: 256000, MaxOutputTokens: 64000},
	{ID: "grok-4-fast", Provider: "xai", ContextWindow: 2000000, MaxOutputTokens: 30000},
	{ID: "grok-code-fast-1", Provider: "xai", ContextWindow: 256000, MaxOutputTokens: 10000},
	{ID: "command-r", Provider: "cohere", ContextWindow: 128000, MaxOutputTokens: 4000},
	{ID: "command-a", Provider: "cohere", ContextWindow: 256000, MaxOutputTokens: 8000},
	{ID: "phi-4", Provider: "microsoft", ContextWindow: 16384},
}
