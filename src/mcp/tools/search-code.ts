import { z } from 'zod';
import { searchFilter } from '../../host/set.ts';
import { resultJson } from '../../search/search.ts';
import { type Answer, defineTool, numbered, READ_ONLY, rootArg, type ToolContext } from '../common.ts';

const inputSchema = {
  query: z.string().min(1).describe('What to look for: a question, identifiers, an error message'),
  top_k: z.number().int().min(1).max(50).default(10).describe('Chunks to return (1-50)'),
  mode: z
    .enum(['hybrid', 'lexical', 'dense'])
    .optional()
    .describe('Retrieval mode; default hybrid when vectors exist'),
  path: z.array(z.string()).optional().describe('Only files under these path prefixes, e.g. ["src/server"]'),
  language: z.array(z.string()).optional().describe('Only these languages, e.g. ["typescript", "python"]'),
  repo: z
    .string()
    .optional()
    .describe('Which repository (see list_repos); "*" searches every one; default: the server\'s own'),
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
  for (const r of results) {
    const sym = r.symbol ? ` ${r.kind ?? 'symbol'} ${r.symbol}` : '';
    lines.push(
      `\n${r.repo ? `${r.repo}:` : ''}${r.path}:${r.startLine}-${r.endLine}${sym} (score ${r.score})`,
      numbered(r.snippetLine, r.snippet.split('\n')),
    );
  }
  return {
    text: lines.join('\n'),
    data: { query, mode: res.mode, results, files: res.files.slice(0, 10) },
  };
}

export const searchCodeTool = defineTool({
  name: 'search_code',
  title: 'Search the code',
  description:
    'Search this repository for code relevant to a question or identifier (hybrid: keywords, file and symbol names, and meaning). Returns chunks with path, line range, enclosing symbol, score and a short snippet. Use it to find where something is implemented before reading files; ask in plain words or with identifiers.',
  inputSchema,
  annotations: { title: 'Search the code', ...READ_ONLY },
  handler: searchCode,
});
