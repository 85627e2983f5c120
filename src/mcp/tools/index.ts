import type { McpTool } from '../common.ts';
import { findSymbolTool } from './find-symbol.ts';
import { getContextTool } from './get-context.ts';
import { grepMcpTool } from './grep.ts';
import { indexStatusTool } from './index-status.ts';
import { listReposTool } from './list-repos.ts';
import { listSymbolsTool } from './list-symbols.ts';
import { nearestVectorsTool } from './nearest.ts';
import { readFileTool } from './read-file.ts';
import { reindexTool } from './reindex.ts';
import { repoMapTool } from './repo-map.ts';
import { searchCodeTool } from './search-code.ts';

/** Every MCP tool, in the order a client lists them. */
export const TOOLS: readonly McpTool[] = [
  searchCodeTool,
  grepMcpTool,
  getContextTool,
  findSymbolTool,
  listSymbolsTool,
  readFileTool,
  listReposTool,
  repoMapTool,
  indexStatusTool,
  reindexTool,
  nearestVectorsTool,
];
