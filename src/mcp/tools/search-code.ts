import { z } from 'zod';
import { searchFilter } from '../../host/set.ts';
import { resultJson, resultLabel } from '../../host/vocabulary.ts';
import { type Answer, defineTool, numbered, READ_ONLY, rootArg, type ToolContext } from '../common.ts';

const inputSchema = {
  query: z.string().min(1).describe('A question, identifiers or an error message'),
  top_k: z.number().int().min(1).max(50).default(10),
  mode: z.enum(['hybrid', 'lexical', 'dense']).optional(),
  path: z.array(z.string()).optional().describe('Only under these path prefixes'),
  language: z.array(z.string()).optional(),
  repo: z.string().optional().describe('A repository (list_repos), or "*" for all'),
  root: rootArg,
};

/** search_code: one search over the set (or the project named by root), hits as numbered snippets. */
export async function searchCode(
  { query, top_k, mode, path, language, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { set, projectOf }: ToolContext,
): Promise<Answer> {
  const filter = searchFilter({ pathPrefixes: path, languages: language });
  const options = { topK: top_k, ...(mode ? { mode } : {}), ...(filter ? { filter } : {}) };
  // one repository (by name or root), or every one (`*`); snippets come redacted by each one's settings
  const res =
    root === undefined
      ? await set.search(query, { ...options, repos: repo ? [repo] : [] })
      : await (await projectOf(repo, root)).search(query, options);
  const results = res.results.map(resultJson);
  const lines = [
    results.length
      ? `${results.length} result${results.length === 1 ? '' : 's'} (${res.mode}) for "${query}":`
      : `no match for "${query}" (${res.mode}): try other words, or find_symbol for an exact name`,
  ];
  // results that may be stale say so first, in one line an agent can act on
  if (res.stale) lines.unshift(`note: ${res.stale}`);
  for (const r of results) {
    const label = resultLabel(r);
    const sym = label ? ` ${r.kind ?? 'symbol'} ${label}` : '';
    lines.push(
      `\n${r.repo ? `${r.repo}:` : ''}${r.path}:${r.startLine}-${r.endLine}${sym} (score ${r.score})`,
      numbered(r.snippetLine, r.snippet.split('\n')),
    );
  }
  return {
    text: lines.join('\n'),
    data: {
      query,
      mode: res.mode,
      results,
      files: res.files.slice(0, 10),
      ...(res.stale ? { stale: res.stale } : {}),
    },
  };
}

export const searchCodeTool = defineTool({
  name: 'search_code',
  title: 'Search the code',
  description:
    'Find code relevant to a question, identifiers or an error message (keywords, names and meaning). Returns ranked chunks: path:lines, symbol, score, numbered snippet.',
  inputSchema,
  annotations: READ_ONLY,
  handler: searchCode,
});
