/**
 * The one list of heavy folders: version control data, dependencies, virtual
 * environments, caches and build output. Skill discovery never descends into
 * them; `grep`, `glob` and `ls` skip them below the search root.
 *
 * @module
 */

/** Names of folders that are heavy or generated. */
export const HEAVY_FOLDER_NAMES: readonly string[] = Object.freeze([
  ".git",
  ".hg",
  ".svn",
  "node_modules",
  ".venv",
  "venv",
  "__pycache__",
  ".mypy_cache",
  ".pytest_cache",
  ".ruff_cache",
  ".tox",
  "dist",
  "build",
  "target",
  ".cache",
  ".next",
  ".turbo",
  "coverage",
]);
