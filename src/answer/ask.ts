import { toMessages } from '../context/assemble.ts';
import { QuarryError } from '../errors.ts';
import { type LlmProvider, openLlm } from '../llm/provider.ts';
import { contextWindow, countTokens, outputBudget } from '../llm/tokens.ts';
import type { ChatMessage } from '../llm/types.ts';
import type { AssembledContext, AssembleOptions, Project } from '../project/types.ts';
import type { RoutedAnswer } from './router.ts';

export interface AskOptions extends AssembleOptions {
  /** An opened model; otherwise the configured (or `model`) one is opened. */
  llm?: LlmProvider;
  /** Earlier turns of a chat, oldest first, before this question. */
  history?: ChatMessage[];
  /** Skip the structure router. */
  noRouter?: boolean;
  signal?: AbortSignal;
}

export interface Asked {
  /** Set when the structure router answered: no context, no model. */
  routed?: RoutedAnswer;
  /** Why a structural question fell back to retrieval. */
  fallback?: string;
  /** Something the user should know about this answer (a guessed context window). */
  note?: string;
  context?: AssembledContext;
  /** The answer, streamed. */
  stream?: AsyncIterable<string>;
  /** The answer's token limit: `min(requested, window - input - margin)`. */
  maxOutputTokens?: number;
  model?: string;
}

/** Shared by ask, chat, MCP and the web panel: route, or retrieve + assemble + stream an answer. */
export async function ask(project: Project, question: string, options: AskOptions = {}): Promise<Asked> {
  if (!question.trim())
    throw new QuarryError('BAD_INPUT', 'the question is empty: ask something about the code');
  let fallback: string | undefined;
  if (!options.noRouter && !options.all && !options.target) {
    const routed = await project.route(question);
    if (routed && 'answer' in routed) return { routed: routed.answer };
    if (routed && 'fallback' in routed) fallback = `${routed.fallback}: answering from retrieval instead`;
  }
  const llm = options.llm ?? (await openLlm(project.config.llm, options.model));
  const context = await project.context(question, {
    ...options,
    model: llm.id,
    ...(llm.contextWindow ? { window: llm.contextWindow } : {}),
  });
  const messages = [...toMessages(context)];
  if (options.history?.length) messages.splice(1, 0, ...options.history);
  const window = llm.contextWindow || contextWindow(llm.id, project.config.llm.contextWindow);
  const historyTokens = (options.history ?? []).reduce((t, m) => t + countTokens(m.content), 0);
  const maxOutputTokens = outputBudget(
    window,
    context.tokens.prompt + historyTokens,
    project.config.llm.maxOutputTokens,
  );
  // an answer squeezed below 128 tokens (or below what was asked for, if less) is not worth asking for
  if (maxOutputTokens < Math.min(128, project.config.llm.maxOutputTokens))
    throw new QuarryError(
      'TOO_BIG',
      `the prompt (${context.tokens.prompt} tokens) leaves no room for an answer in ${llm.id}'s ${window}-token window: lower --budget`,
    );
  return {
    ...(fallback ? { fallback } : {}),
    ...(llm.windowGuessed
      ? {
          note: `${llm.id}'s context window is unknown to quarry: assuming ${window.toLocaleString('en')} tokens (set llm.context_window)`,
        }
      : {}),
    context,
    model: llm.id,
    maxOutputTokens,
    stream: llm.stream(messages, {
      maxOutputTokens,
      ...(options.signal ? { signal: options.signal } : {}),
    }),
  };
}
