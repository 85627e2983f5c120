import { type Answer, defineTool, READ_ONLY, type ToolContext } from '../common.ts';

/** list_repos: the set's repositories, one line each. */
export async function listRepos(_args: Record<string, never>, { set }: ToolContext): Promise<Answer> {
  const repos = await set.list();
  const lines = repos.map(
    (r) =>
      `${r.name}: ${r.files} files, ${r.chunks} chunks, updated ${r.lastIndexedAt ?? 'never'}${r.git?.commit ? `, ${r.git.branch ?? 'detached'}@${r.git.commit.slice(0, 12)}` : ''}`,
  );
  return { text: lines.join('\n') || 'no repositories', data: { repos } };
}

export const listReposTool = defineTool({
  name: 'list_repos',
  title: 'List repositories',
  description: 'The repositories this server holds; pass a name as repo to the other tools.',
  inputSchema: {},
  annotations: READ_ONLY,
  handler: listRepos,
});
