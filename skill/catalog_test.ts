import {
  assert,
  assertEquals,
  assertLessOrEqual,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { formatCatalog } from "./catalog.ts";
import type { Skill } from "./types.ts";

function skill(name: string, description: string, location?: string): Skill {
  return {
    name,
    description,
    basePath: `/skills/${name}`,
    location: location ?? `/skills/${name}/SKILL.md`,
    instructions: "",
    frontMatter: { name, description },
    warnings: [],
  };
}

function descriptions(catalog: string): string[] {
  return [...catalog.matchAll(/<description>([^<]*)<\/description>/g)].map(
    (m) => m[1]!,
  );
}

Deno.test("formatCatalog() is empty without skills", () => {
  assertEquals(formatCatalog([]), "");
});

Deno.test("formatCatalog() lists name, description and location in XML", () => {
  assertEquals(
    formatCatalog([skill("pdf", "Fills PDF forms.")]),
    "<available_skills>\n<skill>\n<name>pdf</name>\n" +
      "<description>Fills PDF forms.</description>\n" +
      "<location>/skills/pdf/SKILL.md</location>\n</skill>\n</available_skills>",
  );
});

Deno.test("formatCatalog() sorts by name then location, whatever the input order", () => {
  const catalog = formatCatalog([
    skill("zeta", "z"),
    skill("alpha", "a2", "/b/SKILL.md"),
    skill("Beta", "b"),
    skill("alpha", "a1", "/a/SKILL.md"),
  ]);
  assertEquals(descriptions(catalog), ["b", "a1", "a2", "z"]);
  assertEquals(
    formatCatalog([skill("b", "x"), skill("a", "y")]),
    formatCatalog([skill("a", "y"), skill("b", "x")]),
  );
});

Deno.test("formatCatalog() escapes XML special characters in every field", () => {
  const catalog = formatCatalog([
    skill(
      "a<b>",
      "Use </description><skill> & more",
      "/x/&y/SKILL.md",
    ),
  ]);
  assertStringIncludes(catalog, "<name>a&lt;b&gt;</name>");
  assertStringIncludes(
    catalog,
    "<description>Use &lt;/description&gt;&lt;skill&gt; &amp; more</description>",
  );
  assertStringIncludes(catalog, "<location>/x/&amp;y/SKILL.md</location>");
  assertEquals(catalog.match(/<skill>/g)?.length, 1);
});

Deno.test("formatCatalog() shortens the longest descriptions to fit the budget", () => {
  const skills = [
    skill("short", "Short and whole."),
    ...Array.from(
      { length: 20 },
      (_, i) =>
        skill(`long-${String(i).padStart(2, "0")}`, "word ".repeat(200).trim()),
    ),
  ];
  const full = formatCatalog(skills, { maxChars: 1_000_000 });
  assert(full.length > 20_000);
  assertEquals(descriptions(full).every((d) => !d.endsWith("…")), true);

  const catalog = formatCatalog(skills, { maxChars: 6_000 });
  assertLessOrEqual(catalog.length, 6_000);
  assert(catalog.length > 5_000, "uses most of the budget");
  const [long0, ...rest] = descriptions(catalog);
  assert(long0!.endsWith("…"), long0);
  assert(long0!.length > 50, "still says something");
  assertEquals(rest.at(-1), "Short and whole.");
  assertEquals(catalog.match(/<skill>/g)?.length, 21);
  // The default budget is 16 000 characters.
  assertLessOrEqual(formatCatalog(skills).length, 16_000);
});

Deno.test("formatCatalog() keeps every name and location even when the budget is tiny", () => {
  const catalog = formatCatalog(
    [skill("one", "x".repeat(500)), skill("two", "y".repeat(500))],
    { maxChars: 10 },
  );
  assertStringIncludes(catalog, "<name>one</name>");
  assertStringIncludes(catalog, "<name>two</name>");
  assertEquals(descriptions(catalog), ["", ""]);
});

Deno.test("formatCatalog() shows locations from locationOf", () => {
  const catalog = formatCatalog([skill("pdf", "d")], {
    locationOf: (s) => `/workspace/skills/${s.name}`,
  });
  assertStringIncludes(catalog, "<location>/workspace/skills/pdf</location>");
});

Deno.test("formatCatalog() refuses a budget that is not a positive integer", () => {
  assertThrows(
    () => formatCatalog([skill("a", "b")], { maxChars: 0 }),
    RangeError,
    'maxChars "0": it must be a positive integer',
  );
});

Deno.test("formatCatalog() keeps configured values out of descriptions, before shortening", () => {
  const secret = "tok-0123456789abcdef";
  const skill = {
    name: "api",
    description: `Calls the API with ${secret} and more words after it`,
    basePath: "/s/api",
    location: "/s/api/SKILL.md",
    instructions: "",
    frontMatter: {},
    warnings: [],
  };
  const full = formatCatalog([skill], { secrets: [secret] });
  assert(!full.includes("tok-0123"), full);
  assert(full.includes("Calls the API with [redacted] and more"), full);
  // A budget that would cut the description inside the secret.
  for (let budget = 120; budget < 200; budget++) {
    const cut = formatCatalog([skill], { secrets: [secret], maxChars: budget });
    assert(!cut.includes("tok-0"), cut);
  }
  // Without secrets the description is shown as it is.
  assert(formatCatalog([skill]).includes(secret));
});
