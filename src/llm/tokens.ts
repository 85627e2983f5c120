import { countTokens as countO200k } from 'gpt-tokenizer';

/**
 * Tokens in `text` as OpenAI's o200k_base encoding counts them (gpt-tokenizer). Other families' tokenizers differ
 * by a few percent on code; the safety margin of `outputBudget` absorbs that.
 */
export function countTokens(text: string): number {
  if (!text) return 0;
  // BPE merges within one pre-token cost time quadratic in its length: a run of thousands of characters with no
  // space (minified code, base64, a pasted blob) took seconds. Such runs are counted in slices (at most a token
  // more per slice than whole).
  if (!LONG_RUN.test(text)) return countO200k(text);
  let n = 0;
  const rest = text.replace(LONG_RUNS, (run) => {
    for (let i = 0; i < run.length; i += RUN_SLICE) n += countO200k(run.slice(i, i + RUN_SLICE));
    return ' ';
  });
  return n + countO200k(rest);
}

const RUN_SLICE = 512;
const LONG_RUN = /\S{1024}/;
const LONG_RUNS = /\S{1024,}/g;

/** Context windows (input + output tokens) per model family; the first pattern that matches wins. */
const WINDOWS: Array<[RegExp, number]> = [
  [/gpt-4\.1|gemini|llama-?4/i, 1_000_000],
  [/gpt-5/i, 400_000],
  [/claude|\bo[134]\b|o[134]-/i, 200_000],
  [/gpt-4o|gpt-4-turbo|llama-?3\.[1-3]|llama3\.[1-3]|qwen3|deepseek|mistral-large|codestral/i, 128_000],
  [/qwen2\.5|qwen-?coder|mistral|mixtral|gemma-?3|phi-?4/i, 32_768],
  [/gpt-4\b|gpt-4-/i, 8_192],
  [/gpt-3\.5/i, 16_385],
  [/gemma|llama|phi|starcoder|codellama/i, 8_192],
];

/** What quarry assumes for a model it does not know: small, so that nothing is cut off. */
export const DEFAULT_WINDOW = 8_192;

/** The context window of a model (`gpt-4o`, `ollama:qwen2.5-coder:7b`, `anthropic:claude-sonnet-4-5`). */
/** Whether quarry knows this model's window (else it assumes the default, and says so). */
export function knownWindow(model: string | undefined): boolean {
  return Boolean(model && WINDOWS.some(([re]) => re.test(model)));
}

export function contextWindow(model: string | undefined, override?: number): number {
  if (override && override > 0) return override;
  if (!model) return DEFAULT_WINDOW;
  for (const [re, n] of WINDOWS) if (re.test(model)) return n;
  return DEFAULT_WINDOW;
}

/** Tokens kept free of a window for tokenizer differences and message framing: 5%, at least 256. */
export function safetyMargin(window: number): number {
  return Math.max(256, Math.ceil(window * 0.05));
}

/** `max_output = min(requested, window - input - margin)`; never below zero. */
export function outputBudget(window: number, inputTokens: number, requested: number): number {
  return Math.max(0, Math.min(requested, window - inputTokens - safetyMargin(window)));
}
