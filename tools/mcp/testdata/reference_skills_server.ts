// The official TypeScript SDK 2.x's reference server of the skills extension
// (`SkillsExtension`, loaded from a folder by `loadSkills`) over stdio: the
// server skillrun's MCP skills client is tested against. Test-only.
// Usage: deno run -A reference_skills_server.ts <skills folder>
import { McpServer } from "npm:@modelcontextprotocol/server@2.4.0";
import { StdioServerTransport } from "npm:@modelcontextprotocol/server@2.4.0/stdio";
import { loadSkills } from "npm:@modelcontextprotocol/server@2.4.0/ext/skills/node";

const root = Deno.args[0];
if (!root) throw new Error("usage: reference_skills_server.ts <skills folder>");
const mcp = new McpServer({ name: "reference-skills", version: "1.0.0" });
(await loadSkills(root)).attach(mcp);
await mcp.connect(new StdioServerTransport());
