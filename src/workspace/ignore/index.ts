/**
 * What decides that a path is left out: the rules (quarry's defaults, secret names), the matcher that applies them
 * with the config's and the ignore files', the build folders git decides, and the folders' memos a walk keeps.
 */
export { BUILD_FOLDERS, liftedBuildFolder, trackedByDefaults, trackedUnder } from './build-folders.ts';
export {
  baseMatchers,
  DEFAULTS_SOURCE,
  defaultsMatcher,
  IGNORE_FILES,
  ignoredBy,
  ignoreFile,
  isIgnored,
  type Matcher,
  NONE,
  readPatterns,
  verdict,
  type WalkIgnore,
} from './matcher.ts';
export {
  addRules,
  baseFingerprint,
  type Decision,
  type FolderMemo,
  type FolderMemos,
  folderMemoFile,
  folderStamp,
  loadFolderMemos,
  RACY_MS,
  rememberedDecisions,
  rememberedIgnoreFiles,
  sameRules,
  sameStamp,
  saveFolderMemos,
} from './memo.ts';
export {
  containsPrivateKey,
  DEFAULT_IGNORES,
  looksLikeSecretName,
  looksLikeSecretPath,
  rulesText,
  VERSION_CONTROL_IGNORES,
} from './rules.ts';
