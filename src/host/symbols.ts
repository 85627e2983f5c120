// The symbol lists as the faces print them. Its own module (not host/answers.ts, which brings the AI SDK, the
// tokenizer's tables and tree-sitter): `quarry def` starts as fast as `quarry search`.
export { formatDefinitions, formatReferences, formatSymbols } from '../answer/format.ts';
