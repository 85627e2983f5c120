// The answer layer as the faces use it: a question answered with citations, a file edited (proposed, reviewed,
// written, undone), and the chat model opened (the symbol lists' formatters are host/symbols.ts). Each takes a
// Project and calls its seam; the CLI loads this module only for the commands that answer or edit (it brings in the
// AI SDK and tree-sitter's tables).

export { type Asked, type AskOptions, ask } from '../answer/ask.ts';
export {
  applyEdit,
  editPrompt,
  hasUncommittedChanges,
  listHistory,
  type ProposedEdit,
  pendingFiles,
  proposeEdit,
  reviewedEdit,
  type Snapshot,
  savePending,
  undoEdit,
} from '../answer/edit.ts';
export { type LlmProvider, openLlm } from '../llm/provider.ts';
export type { ChatMessage } from '../llm/types.ts';
