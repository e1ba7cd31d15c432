// Another revision of the server, compiled beside this checkout, so that a
// bench can measure it and this one in the same run (bench/startup.ts
// --compare, bench/issue28.ts --before).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export interface CompiledRevision {
  /** The temporary checkout (its own package.json and scripts; node_modules is this checkout's). */
  dir: string;
  /** Its compiled server: dist/cli.js and the rest. */
  dist: string;
  /** The full commit ID. */
  commit: string;
  cleanup: () => void;
}

/** The full commit ID of `revision` in this repository. */
export function commitOf(revision: string): string {
  return execFileSync("git", ["-C", root, "rev-parse", "--verify", `${revision}^{commit}`]).toString().trim();
}

/**
 * `revision` checked out in a temporary git worktree (node_modules shared by
 * a symlink) with its server compiled by tsc. The web client is not built:
 * the server's start does not read it (its page answers "not built" there).
 */
export function compileRevision(revision: string): CompiledRevision {
  if (!/^[\w./~^-]+$/.test(revision)) throw new Error(`not a revision: ${revision}`);
  const commit = commitOf(revision);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-revision-"));
  execFileSync("git", ["-C", root, "worktree", "add", "--detach", "--quiet", dir, commit]);
  const cleanup = () => execFileSync("git", ["-C", root, "worktree", "remove", "--force", dir]);
  try {
    fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
    execFileSync(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", path.join(dir, "tsconfig.build.json")], { cwd: dir });
  } catch (error) {
    cleanup();
    throw error;
  }
  return { dir, dist: path.join(dir, "dist"), commit, cleanup };
}
