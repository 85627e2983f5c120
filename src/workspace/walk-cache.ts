// The folders' memos moved to ignore/memo.ts; this path stays for the modules that import it.
export { folderMemoFile, loadFolderMemos, saveFolderMemos } from './ignore/memo.ts';
