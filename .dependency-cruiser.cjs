/**
 * quarry's layers, enforced (`npm run deps`, part of the test command). A module may import its own layer and the
 * layers below it, never one above; and no import circle anywhere. docs/architecture.md draws the same picture.
 * Type-only imports count: a type that climbs a layer is a circle waiting for its first value import.
 */
const LAYERS = [
  // 0. the ground: errors, settings, files on disk, the network, tokens of text
  { name: 'base', path: '^src/(errors\\.ts|config/|workspace/|net/|workers\\.ts)' },
  // 1. pure parts: chunking, LLM providers and token counts
  { name: 'parts', path: '^src/(chunk|llm)/' },
  // 2. engines behind contracts: stores (and their writer lock), embedders
  { name: 'engines', path: '^src/(store|embed)/' },
  // 3. the work on one index: indexing, retrieval, re-ranking
  { name: 'core', path: '^src/(indexing|search|rerank)/' },
  // 4. the seam's types: what every face and every project speaks
  { name: 'seam', path: '^src/project/types\\.ts$' },
  // 5. what is built on one indexed project: context, answers, edits
  { name: 'answers', path: '^src/(context|answer)/' },
  // 6. projects: local, remote, over MCP, the sets a server serves; eval runs over them
  { name: 'projects', path: '^src/(project/(?!types\\.ts$)|eval/)' },
  // 7. a project kept fresh: watching, auto-sync, a live project
  { name: 'live', path: '^src/watch/' },
  // 8. what every server shares: the guard, tokens, ports, discovery
  { name: 'host', path: '^src/host/' },
  // 9. faces: MCP tools, the HTTP API (which also mounts MCP), the CLI (which starts both)
  { name: 'mcp', path: '^src/mcp/' },
  { name: 'server', path: '^src/server/' },
  { name: 'cli', path: '^src/cli/' },
  // 10. the library's entries
  { name: 'entries', path: '^src/(?!errors\\.ts$|workers\\.ts$)[^/]+\\.ts$' },
];

const upward = LAYERS.flatMap((layer, i) => {
  const above = LAYERS.slice(i + 1)
    .filter((l) => l.name !== 'entries' || layer.name !== 'base')
    .map((l) => l.path);
  if (!above.length) return [];
  return [
    {
      name: `no-up-from-${layer.name}`,
      comment: `${layer.name} imports only its own layer and those below it`,
      severity: 'error',
      from: { path: layer.path },
      to: { path: above.map((p) => `(${p})`).join('|') },
    },
  ];
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import circles, type-only imports included',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...upward,
    {
      name: 'faces-through-the-seam',
      comment:
        'a face (cli/, server/, mcp/) reaches the core through project/ and host/ only; settings (config/) are what ' +
        'it parses flags and requests into, errors.ts what it reports. Type-only imports aside.',
      severity: 'error',
      from: { path: '^src/(cli|server|mcp)/' },
      to: {
        path: '^src/',
        pathNot: '^src/(cli|server|mcp|project|host|config)/|^src/errors\\.ts$',
        dependencyTypesNot: ['type-only'],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6'],
  },
};
