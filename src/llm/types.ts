/** What an LLM provider takes and gives: the seam between answers and models (no SDK here). */

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface GenerateOptions {
  temperature?: number;
  maxOutputTokens?: number;
  signal?: AbortSignal;
}

/**
 * The LLM seam: every provider streams text for a list of messages. Remote providers go through the Vercel AI SDK;
 * each is tested against a real HTTP server on 127.0.0.1 that speaks its protocol (test/llm.test.ts).
 */
export interface LlmProvider {
  /** `provider:model`, as the user wrote it. */
  readonly id: string;
  readonly contextWindow: number;
  /** True when the window is a default for a model quarry does not know (no llm.context_window set). */
  readonly windowGuessed?: boolean;
  stream(messages: ChatMessage[], options?: GenerateOptions): AsyncIterable<string>;
}
