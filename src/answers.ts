/**
 * `quarry/answers`: context assembly, the repository map, LLM providers, ask, the structure router and edits. A
 * separate entry so that `import 'quarry'` (index and search) does not load the AI SDK or the tokenizer's tables.
 */
export { type Asked, type AskOptions, ask } from './answer/ask.ts';
export {
  applyEdit,
  BEGIN,
  END,
  extractFile,
  listHistory,
  type ProposedEdit,
  proposeEdit,
  type Snapshot,
  undoEdit,
} from './answer/edit.ts';
export {
  findDefinitions,
  findReferences,
  type RoutedAnswer,
  type RouteResult,
  routeQuestion,
} from './answer/router.ts';
export {
  type AssembledContext,
  type AssembleOptions,
  assembleContext,
  type ContextBlock,
  DEFAULT_SYSTEM_PROMPT,
  renderBlock,
  toMessages,
} from './context/assemble.ts';
export { buildRepoMap, type MapEntry, type RepoMap, rankDefinitions } from './context/repomap.ts';
export { type GenerateOptions, type LlmProvider, openLlm, parseModelSpec } from './llm/provider.ts';
export { contextWindow, countTokens, outputBudget } from './llm/tokens.ts';
export type { ChatMessage } from './llm/types.ts';
