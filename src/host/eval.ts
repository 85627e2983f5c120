// `quarry eval`: retrieval measured on a query file or on this repository's own git history, through the same
// Project seam every face searches with.

export { readQueries, runEval } from '../eval/eval.ts';
export { evalGitHistory } from '../eval/git.ts';
