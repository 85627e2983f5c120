// What each MCP tool's answer costs an agent, in tokens (o200k, gpt-tokenizer): the text the model reads.
//   node --import tsx bench/mcp-tokens.ts <indexed project root> [--json]
// The calls are fixed (vite's tree in docs/mcp.md); run it before and after a change to the tools' output.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { countTokens } from 'gpt-tokenizer';
import { createQuarryMcp } from '../src/mcp/server.ts';

const root = process.argv[2];
if (!root) {
  console.error('usage: node --import tsx bench/mcp-tokens.ts <indexed project root> [--json]');
  process.exit(2);
}
const mcp = await createQuarryMcp({ root, watch: false });
const server = mcp.makeServer();
const [a, b] = InMemoryTransport.createLinkedPair();
await server.connect(a);
const client = new Client({ name: 'mcp-tokens', version: '1' });
await client.connect(b);
const tools = new Set((await client.listTools()).tools.map((t) => t.name));

const calls: Array<[string, string, Record<string, unknown>]> = [
  ['search_code top 3', 'search_code', { query: 'hot module replacement update propagation', top_k: 3 }],
  ['search_code top 10', 'search_code', { query: 'hot module replacement update propagation', top_k: 10 }],
  ['find_symbol', 'find_symbol', { name: 'createServer' }],
  ['list_symbols', 'list_symbols', { path: 'packages/vite/src/node/server/index.ts' }],
  ['read_file 60 lines', 'read_file', { path: 'packages/vite/src/node/server/index.ts', start: 1, end: 60 }],
  [
    'get_context 4k',
    'get_context',
    { question: 'how does the dev server handle hot updates?', budget: 4000 },
  ],
  ['list_repos', 'list_repos', {}],
  ['index_status', 'index_status', {}],
  ['repo_map 1k', 'repo_map', { budget: 1000 }],
];
// what goes over the wire per answer: the text, and structured content when the client asks for it (--structured,
// as quarry's own remote client does; every client got it before 2026-11-24)
const structured = process.argv.includes('--structured');
const rows: Array<{ call: string; tokens: number; chars: number; wire: number }> = [];
calls.push(['grep literal', 'grep', { pattern: 'handleHMRUpdate', fixed: true }]);
for (const [label, name, args] of calls) {
  if (!tools.has(name)) continue;
  const r = (await client.callTool({
    name,
    arguments: args,
    ...(structured ? { _meta: { 'quarry/structured': true } } : {}),
  })) as { content: Array<{ text?: string }>; structuredContent?: unknown };
  const text = r.content.map((c) => c.text ?? '').join('');
  const wire = text.length + (r.structuredContent ? JSON.stringify(r.structuredContent).length : 0);
  rows.push({ call: label, tokens: countTokens(text), chars: text.length, wire });
}
const list = JSON.stringify((await client.listTools()).tools);
if (process.argv.includes('--json')) console.log(JSON.stringify({ rows, toolsList: list.length }));
else {
  for (const r of rows)
    console.log(
      `${r.call.padEnd(22)} ${String(r.tokens).padStart(6)} tokens ${String(r.chars).padStart(7)} chars of text ${String(r.wire).padStart(7)} chars in all`,
    );
  console.log(`tools/list: ${list.length} chars, ${countTokens(list)} tokens`);
}
await client.close();
await mcp.close();
