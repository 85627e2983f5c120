import { z } from 'zod';
import { QuarryError } from '../../errors.ts';
import { NEAREST_MAX } from '../../project/types.ts';
import { type Answer, defineTool, READ_ONLY, repoArg, type ToolContext } from '../common.ts';

const paths = z.array(z.string()).max(20_000);

const inputSchema = {
  embedder: z.string().min(1).max(300),
  vector: z.array(z.number()).min(1).max(8192),
  level: z.enum(['chunks', 'files']).default('chunks'),
  limit: z.number().int().min(1).max(NEAREST_MAX).default(100),
  exclude_paths: paths.optional(),
  paths: paths.optional(),
  path_prefixes: paths.optional(),
  languages: z.array(z.string()).max(100).optional(),
  repo: repoArg,
};

/** nearest_vectors: the stored vectors nearest a query vector (a quarry client's local overlay merges them). */
export async function nearestVectors(
  args: z.infer<z.ZodObject<typeof inputSchema>>,
  { set }: ToolContext,
): Promise<Answer> {
  const project = await set.get(args.repo);
  if (!project.nearest)
    throw new QuarryError('BAD_INPUT', `${project.name} keeps no vectors this server can search`);
  const filter = {
    ...(args.paths?.length ? { paths: args.paths } : {}),
    ...(args.path_prefixes?.length ? { pathPrefixes: args.path_prefixes } : {}),
    ...(args.languages?.length ? { languages: args.languages } : {}),
    ...(args.exclude_paths?.length ? { excludePaths: args.exclude_paths } : {}),
  };
  const res = await project.nearest({
    embedder: args.embedder,
    vector: args.vector,
    level: args.level,
    limit: args.limit,
    ...(Object.keys(filter).length ? { filter } : {}),
  });
  const text = res.hits.length
    ? res.hits
        .map((h) => `${h.score} ${h.path}${h.startLine ? `:${h.startLine}-${h.endLine}` : ''}`)
        .join('\n')
    : `no vectors of ${args.embedder} here (the index's embedder: ${res.embedder?.id ?? 'none'})`;
  return { text, data: res as unknown as Record<string, unknown> };
}

export const nearestVectorsTool = defineTool({
  name: 'nearest_vectors',
  title: 'Nearest vectors',
  description: "For quarry clients: stored chunks or files nearest a query vector of the index's embedder.",
  inputSchema,
  annotations: READ_ONLY,
  handler: nearestVectors,
});
