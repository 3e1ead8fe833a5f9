package research

// MaxTokenBudget is the largest --max-tokens / maxTokens accepted: far
// above any Deep Research job's use, small enough that sums never overflow.
const MaxTokenBudget = 1 << 40
