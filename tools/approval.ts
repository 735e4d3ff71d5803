/**
 * Approvals of tool calls: the application's policy (`approve`), the active
 * skill's `allowed-tools` that pre-approve what the policy would ask about,
 * and the one step every call of a tool set takes through them.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { MANIFEST_FILE } from "../package/installed.ts";
import { sha256Of } from "../package/_digest.ts";
import { remoteOriginOf } from "../runtimes/remote/origin.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import type { Skill } from "../skill/types.ts";
import {
  type AllowedToolRule,
  callCovered,
  loadCommandParser,
  parseAllowedTools,
} from "./_allowed_tools.ts";

/** What a policy answers for one call. */
export type ToolApprovalDecision = "allow" | "deny" | "ask";

/** One call as the policy sees it (and as an approval request names it). */
export interface ToolApprovalCall {
  /** The tool called, e.g. `bash`. */
  readonly tool: string;
  /** Its input, validated against the tool's schema. */
  readonly input: Readonly<Record<string, unknown>>;
  /** The skill active in this tool set (its last successful `skill` call), if any. */
  readonly skill?: string;
}

/**
 * The application's policy over every call of a tool set: `"allow"` runs it,
 * `"deny"` answers the model an error and runs nothing, `"ask"` needs an
 * approval (see {@linkcode ToolCallOptions.approved} and
 * {@linkcode ToolCallOptions.requestApproval}). A policy that throws or
 * rejects denies (fails closed).
 */
export type ToolApprovalPolicy = (
  call: ToolApprovalCall,
) => ToolApprovalDecision | Promise<ToolApprovalDecision>;

/** What an approval request answers. */
export interface ToolApprovalAnswer {
  /** Whether the call may run. */
  readonly approved: boolean;
  /** Why not, for the model (e.g. `the user declined`). */
  readonly reason?: string;
}

/** Asks someone whether a call may run (the MCP server asks its client). */
export type ToolApprovalRequester = (
  request: ToolApprovalCall,
  options: { readonly signal?: AbortSignal },
) => Promise<boolean | ToolApprovalAnswer>;

/** What the policy step decided for one call, before anything runs. */
export interface ToolApprovalCheck {
  /** `"allow"` (by the policy or pre-approved), `"deny"` or `"ask"`. */
  readonly decision: ToolApprovalDecision;
  /** The call as approved or asked about. */
  readonly call: ToolApprovalCall;
  /** Why, in words: `denied by the policy`, `pre-approved by ...`. */
  readonly reason: string;
}

/** Options of {@linkcode createToolApprover}. */
export interface ToolApproverOptions {
  /** The policy. */
  readonly approve: ToolApprovalPolicy;
  /**
   * Whether skills from installed packages (or fetched from elsewhere) may
   * pre-approve through their `allowed-tools`. Default false: only skills
   * from the application's own folders do.
   */
  readonly trustAllowedTools?: boolean;
  /** The runtime (reads the active skill's files for its digest). */
  readonly runtime: SkillRuntime;
}

/** The policy step of one tool set, and its active skill. */
export interface ToolApprover {
  /**
   * The decision for one call: the policy's, where `"ask"` becomes `"allow"`
   * when the active skill's `allowed-tools` cover the call and its files are
   * what they were when it became active. Never throws.
   */
  check(
    tool: string,
    input: Readonly<Record<string, unknown>>,
  ): Promise<ToolApprovalCheck>;
  /**
   * Records the skill made active by a successful `skill` call (it replaces
   * the one before) with the digest of its prepared files.
   */
  activate(
    skill: Skill,
    basePath: string,
    signal?: AbortSignal,
  ): Promise<void>;
}

/** The most files and bytes of an active skill hashed for its digest. */
const DIGEST_MAX_FILES = 2000;
const DIGEST_MAX_BYTES = 64 * 1024 * 1024;

interface ActiveSkill {
  readonly name: string;
  readonly basePath: string;
  readonly rules: readonly AllowedToolRule[];
  /** The digest at activation; `undefined`: pre-approves nothing. */
  readonly digest: string | undefined;
  /** Why it pre-approves nothing, when it does not. */
  readonly why?: string;
}

/**
 * Makes the policy step of a tool set ({@linkcode buildSkillTools} does it
 * when given `approve`).
 *
 * @param options The policy, the runtime, whether packages are trusted.
 * @returns The approver.
 */
export function createToolApprover(options: ToolApproverOptions): ToolApprover {
  const { approve, runtime } = options;
  let active: ActiveSkill | undefined;
  return {
    async check(tool, input) {
      const current = active;
      const call: ToolApprovalCall = {
        tool,
        input,
        ...(current ? { skill: current.name } : {}),
      };
      let decision: unknown;
      try {
        decision = await approve(call);
      } catch (error) {
        return {
          decision: "deny",
          call,
          reason: `the approval policy failed (${
            error instanceof Error ? error.message : String(error)
          })`,
        };
      }
      if (decision !== "allow" && decision !== "deny" && decision !== "ask") {
        return {
          decision: "deny",
          call,
          reason: `the approval policy answered ${
            JSON.stringify(String(decision))
          }, not "allow", "deny" or "ask"`,
        };
      }
      if (decision !== "ask") {
        return {
          decision,
          call,
          reason: decision === "deny"
            ? "denied by the application's approval policy"
            : "allowed by the application's approval policy",
        };
      }
      if (
        current?.digest !== undefined && callCovered(current.rules, tool, input)
      ) {
        const now = await digestOf(runtime, current.basePath).catch(() =>
          undefined
        );
        // The active skill may have changed meanwhile: only its own check.
        if (now !== undefined && now === current.digest) {
          return {
            decision: "allow",
            call,
            reason:
              `pre-approved by the allowed-tools of the skill "${current.name}"`,
          };
        }
        if (active === current) {
          active = {
            ...current,
            digest: undefined,
            why: "its files changed after it became active",
          };
        }
      }
      return { decision: "ask", call, reason: "needs approval" };
    },
    async activate(skill, basePath, signal) {
      const { rules } = parseAllowedTools(skill.allowedTools ?? []);
      // Replaced at once: the previous skill's list stops counting now.
      active = {
        name: skill.name,
        basePath,
        rules: [],
        digest: undefined,
        why: "its digest is being computed",
      };
      const record = active;
      if (rules.length === 0) return;
      // callCovered() reads commands with it, synchronously.
      if (rules.some((rule) => rule.command !== undefined)) {
        await loadCommandParser();
      }
      if (!options.trustAllowedTools && await fromElsewhere(skill)) {
        active = {
          ...record,
          why:
            "it comes from a package or an MCP server, and the application does not trust their allowed-tools (trustAllowedTools)",
        };
        return;
      }
      let digest: string | undefined;
      try {
        digest = await digestOf(runtime, basePath, signal);
      } catch {
        digest = undefined;
      }
      if (active !== record) return;
      active = digest === undefined
        ? { ...record, why: "its files could not be hashed" }
        : { name: skill.name, basePath, rules, digest };
    },
  };
}

/**
 * Whether a skill comes from an installed package, a remote source or an MCP
 * server (`loadMcpSkills` marks its skills with `mcp`).
 */
async function fromElsewhere(skill: Skill): Promise<boolean> {
  if (remoteOriginOf(skill)) return true;
  if ((skill as { mcp?: unknown }).mcp !== undefined) return true;
  const manifest = hostPath.join(
    hostPath.dirname(skill.basePath),
    MANIFEST_FILE,
  );
  try {
    await Deno.stat(manifest);
    return true;
  } catch (error) {
    // Cannot tell (no permission...): not trusted.
    return !(error instanceof Deno.errors.NotFound);
  }
}

/**
 * The SHA-256 of a prepared skill's files (their paths and contents), read
 * through the runtime, so a file changed or added in the sandbox changes it.
 */
async function digestOf(
  runtime: SkillRuntime,
  basePath: string,
  signal?: AbortSignal,
): Promise<string> {
  const listing = await runtime.fs.list(basePath, {
    depth: 64,
    limit: DIGEST_MAX_FILES + 1,
    filesOnly: true,
    ...(signal ? { signal } : {}),
  });
  const files = listing.entries.filter((entry) => entry.type !== "directory");
  if (listing.truncated || files.length > DIGEST_MAX_FILES) {
    throw new Error(`more than ${DIGEST_MAX_FILES} files`);
  }
  const lines: string[] = [];
  let total = 0;
  for (const file of files.sort((a, b) => a.path < b.path ? -1 : 1)) {
    if (file.type !== "file") {
      lines.push(`${file.path}\u0000${file.type}`);
      continue;
    }
    total += file.size;
    if (total > DIGEST_MAX_BYTES) throw new Error("too large to hash");
    const bytes = await runtime.fs.readBytes(file.path, {
      maxBytes: DIGEST_MAX_BYTES,
      ...(signal ? { signal } : {}),
    });
    lines.push(`${file.path}\u0000${sha256Of(bytes)}`);
  }
  return sha256Of(lines.join("\n"));
}

/** What a skill's `allowed-tools` pre-approve, in words. */
export interface AllowedToolsExplained {
  /** One line per entry understood, e.g. `bash: git with any arguments`. */
  readonly preApproved: readonly string[];
  /** The entries that pre-approve nothing, each with the reason. */
  readonly ignored: readonly string[];
}

/**
 * Says what a skill's `allowed-tools` would pre-approve under a policy that
 * asks (what `cli.ts doctor --skills` prints).
 *
 * @example Claude Code's syntax
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { explainAllowedTools } from "@skillrun/skillrun/tools";
 * assertEquals(explainAllowedTools(["Bash(git:*)", "Read", "Read(./src/**)"]), {
 *   preApproved: ["bash: git with any arguments", "read: every call"],
 *   ignored: [
 *     '"Read(./src/**)": only Bash takes a pattern (a file tool\'s path pattern is not supported)',
 *   ],
 * });
 * ```
 *
 * @param entries The skill's `allowedTools`.
 * @returns What is pre-approved and what is ignored.
 */
export function explainAllowedTools(
  entries: readonly string[],
): AllowedToolsExplained {
  const { rules, ignored } = parseAllowedTools(entries);
  return {
    preApproved: rules.map((rule) =>
      rule.command === undefined
        ? `${rule.tool}: every call`
        : `${rule.tool}: ${
          rule.command.prefix
            ? `${rule.command.words.join(" ")} with any arguments`
            : `exactly "${rule.command.words.join(" ")}"`
        }`
    ),
    ignored,
  };
}
