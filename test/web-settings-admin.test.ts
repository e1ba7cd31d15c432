// The settings and administration panels of the web client, in a real
// browser: custom profile fields, notifications per channel and per topic,
// display preferences; custom emoji, linkifiers, code playgrounds, user
// groups, bots, default channels, the organization icon, roles and
// deactivation — each panel's main action, what the events then show, and
// who may do what.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import sharp from "sharp";
import { axeFindings, BrowserHarness, waitFor } from "./browser.ts";
import { assertSuccess, type TestUser } from "./helpers.ts";

const h = new BrowserHarness();
before(() => h.start());
after(() => h.close());

async function png(color: string): Promise<Buffer> {
  return sharp({ create: { width: 32, height: 32, channels: 4, background: color } }).png().toBuffer();
}

async function openPage(user: TestUser, hash: string): Promise<Page> {
  const page = await h.newPage();
  await h.logIn(page, user);
  await page.goto(`${h.t.url}/${hash}`);
  return page;
}

async function register(user: TestUser, types: string[]): Promise<Record<string, any>> {
  return assertSuccess(await h.t.api(user, "POST", "/register", { fetch_event_types: types }));
}

async function confirmDialog(page: Page, title: string, action: string): Promise<void> {
  const dialog = page.getByRole("dialog", { name: title });
  await dialog.getByRole("button", { name: action }).click();
  await dialog.waitFor({ state: "hidden" });
}

describe("web client: settings and administration", () => {
  test("personal settings load on demand: custom profile fields of every kind, saved and followed live", async () => {
    const t = h.t;
    const owner = t.users.owner;
    const create = async (params: Record<string, unknown>) => assertSuccess(await t.api(owner, "POST", "/realm/profile_fields", params)).id as number;
    const team = await create({ name: "Team", field_type: 1, hint: "Where you work" });
    const bio = await create({ name: "About me", field_type: 2 });
    const office = await create({ name: "Office", field_type: 3, field_data: { berlin: { text: "Berlin", order: "1" }, lisbon: { text: "Lisbon", order: "2" } } });
    const birthday = await create({ name: "Birthday", field_type: 4 });
    const site = await create({ name: "Website", field_type: 5 });
    const mentor = await create({ name: "Mentor", field_type: 6 });
    const github = await create({ name: "GitHub", field_type: 7, field_data: { subtype: "github" } });
    const pronouns = await create({ name: "Pronouns", field_type: 8 });

    const page = await h.newPage();
    const scripts: string[] = [];
    page.on("request", (r) => {
      if (r.resourceType() === "script") scripts.push(r.url());
    });
    await h.logIn(page, t.users.member);
    // The settings page's code is not part of the first load.
    assert.ok(!scripts.some((u) => /\/Settings-[^/]*\.js$/.test(u)), `settings code loaded up front: ${scripts.join(", ")}`);
    await page.goto(`${t.url}/#settings/profile`);
    const fields = page.getByRole("region", { name: "Profile fields" });
    await fields.waitFor();
    assert.ok(scripts.some((u) => /\/Settings-[^/]*\.js$/.test(u)), "the settings page came as its own chunk");

    await fields.getByLabel("Team").fill("Infrastructure");
    await fields.getByLabel("About me").fill("Likes *tea*.");
    await fields.getByLabel("Office").selectOption({ label: "Lisbon" });
    await fields.getByLabel("Birthday").fill("1990-04-02");
    await fields.getByLabel("Website").fill("https://example.com/max");
    await fields.getByLabel("Add a person to Mentor").selectOption({ label: "Mona Moderator" });
    await fields.getByRole("listitem").filter({ hasText: "Mona Moderator" }).waitFor();
    await fields.getByLabel("GitHub").fill("maxm");
    await fields.getByText("https://github.com/maxm").waitFor();
    await fields.getByLabel("Pronouns").fill("he/him");
    await fields.getByRole("button", { name: "Save profile fields" }).click();
    await fields.getByText("Profile fields: saved.").waitFor();

    const profile = async () => assertSuccess(await t.api(owner, "GET", `/users/${t.users.member.id}`, { include_custom_profile_fields: true })).user.profile_data as Record<string, { value: string }>;
    const data = await profile();
    assert.equal(data[team]?.value, "Infrastructure");
    assert.equal(data[bio]?.value, "Likes *tea*.");
    assert.equal(data[office]?.value, "lisbon");
    assert.equal(data[birthday]?.value, "1990-04-02");
    assert.equal(data[site]?.value, "https://example.com/max");
    assert.deepEqual(JSON.parse(data[mentor]!.value), [t.users.moderator.id]);
    assert.equal(data[github]?.value, "maxm");
    assert.equal(data[pronouns]?.value, "he/him");

    // Clearing a value deletes it.
    await fields.getByLabel("Website").fill("");
    await fields.getByRole("button", { name: "Save profile fields" }).click();
    await waitFor("website cleared", async () => (await profile())[site] === undefined);

    // An administrator's change shows in the form at once (realm_user event).
    assertSuccess(await t.api(owner, "PATCH", `/users/${t.users.member.id}`, { profile_data: [{ id: team, value: "Platform" }] }));
    await waitFor("the form follows the event", async () => (await fields.getByLabel("Team").inputValue()) === "Platform");
    // A new field appears live (custom_profile_fields event).
    await create({ name: "Desk", field_type: 1 });
    await fields.getByLabel("Desk").waitFor();
    assert.deepEqual(await axeFindings(page), [], "personal settings: accessibility findings");
    assert.deepEqual(h.pageErrors, []);
  });

  test("notifications per channel (desktop, sound, mobile, email, colour, pin) and per topic", async () => {
    const t = h.t;
    const member = t.users.member;
    const channelId = await h.createChannel("design", [member]);
    assertSuccess(await t.api(member, "POST", "/user_topics", { stream_id: channelId, topic: "logo", visibility_policy: 3 }));
    const page = await openPage(member, "#settings/profile");
    const table = page.getByRole("table", { name: "Channel notification settings" });
    await table.waitFor();
    const sub = async () => ((await register(member, ["subscription"])).subscriptions as Record<string, any>[]).find((s) => s.stream_id === channelId)!;

    await table.getByLabel("Desktop notifications for #design").check();
    await table.getByLabel("Sound notifications for #design").check();
    await table.getByLabel("Mobile notifications for #design").check();
    await table.getByLabel("Email notifications for #design").check();
    await waitFor("notification properties saved", async () => {
      const s = await sub();
      return s.desktop_notifications === true && s.audible_notifications === true && s.push_notifications === true && s.email_notifications === true;
    });
    await table.getByLabel("@all mentions notifications for #design").click();
    await waitFor("wildcard property saved", async () => typeof (await sub()).wildcard_mentions_notify === "boolean");
    await table.getByLabel("Pin #design to the top").check();
    await waitFor("pinned", async () => (await sub()).pin_to_top === true);
    await table.getByLabel("Colour of #design").fill("#336699");
    await waitFor("colour saved", async () => (await sub()).color === "#336699");
    // Changed elsewhere, shown here (subscription event).
    assertSuccess(await t.api(member, "POST", "/users/me/subscriptions/properties", { subscription_data: [{ stream_id: channelId, property: "desktop_notifications", value: false }] }));
    await waitFor("the table follows the event", async () => !(await table.getByLabel("Desktop notifications for #design").isChecked()));

    // Topics: the followed one is listed; muting it from here is saved; a topic muted elsewhere appears.
    const topics = page.getByRole("table", { name: "Topic settings" });
    const logo = topics.getByLabel("Visibility of #design > logo");
    await logo.waitFor();
    assert.equal(await logo.inputValue(), "3");
    await logo.selectOption({ label: "Muted" });
    const policies = async () => (await register(member, ["user_topic"])).user_topics as { topic_name: string; visibility_policy: number }[];
    await waitFor("topic muted", async () => (await policies()).some((p) => p.topic_name === "logo" && p.visibility_policy === 1));
    assertSuccess(await t.api(member, "POST", "/user_topics", { stream_id: channelId, topic: "colours", visibility_policy: 2 }));
    await topics.getByLabel("Visibility of #design > colours").waitFor();
    await topics.getByLabel("Visibility of #design > colours").selectOption({ label: "Default" });
    await topics.getByLabel("Visibility of #design > colours").waitFor({ state: "detached" });
    assert.deepEqual(await axeFindings(page), [], "channel and topic settings: accessibility findings");
    assert.deepEqual(h.pageErrors, []);
  });

  test("display: language, 24-hour time, home view and theme", async () => {
    const t = h.t;
    const mona = t.users.moderator;
    const page = await openPage(mona, "#settings/profile");
    const prefs = page.getByRole("region", { name: "Preferences" });
    await prefs.waitFor();
    const settings = async () => (await register(mona, ["user_settings"])).user_settings as Record<string, unknown>;

    await prefs.getByLabel("Time format").selectOption("24");
    await waitFor("24-hour time saved", async () => (await settings()).twenty_four_hour_time === true);
    await prefs.getByLabel("Home view").selectOption({ label: "Recent conversations" });
    await waitFor("home view saved", async () => (await settings()).web_home_view === "recent_topics");
    // The home view is where the bare address leads.
    await prefs.getByLabel("Home view").selectOption({ label: "Combined feed" });
    await waitFor("home view saved", async () => (await settings()).web_home_view === "all_messages");
    await page.goto(`${t.url}/`);
    await page.getByRole("main", { name: /All messages|Combined feed/ }).waitFor();
    await page.goto(`${t.url}/#settings/profile`);
    await prefs.waitFor();
    await prefs.getByLabel("Dark").check();
    await waitFor("theme saved", async () => (await settings()).color_scheme === 2);
    await waitFor("the page turned dark", async () => (await page.evaluate(() => document.documentElement.dataset.theme ?? document.documentElement.className)).includes("dark"));
    await prefs.getByLabel("Language").selectOption("de");
    await waitFor("language saved", async () => (await settings()).default_language === "de");
    await waitFor("the page switched language", async () => (await page.evaluate(() => document.documentElement.lang)) === "de");
    // The settings themselves are now in German (web/locales/de.json).
    const german = page.getByRole("region", { name: "Präferenzen" });
    assert.equal(await german.getByLabel("Sprache").locator("option:checked").textContent(), "Deutsch");
    await german.getByLabel("Startansicht").waitFor();
    await german.getByLabel("Sprache").selectOption("en");
    await waitFor("back to English", async () => (await page.evaluate(() => document.documentElement.lang)) === "en");
    await prefs.getByLabel("Language").waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("administrators: custom emoji, linkifiers, code playgrounds, default channels and the organization icon; the code loads on demand", async () => {
    const t = h.t;
    const adam = await openPage(t.users.admin, "#organization/organization-profile");

    // Custom emoji: upload, listed, deactivated after confirmation.
    const emoji = adam.getByRole("region", { name: "Custom emoji" });
    await emoji.getByLabel("Emoji name").fill("parley_dot");
    await emoji.getByLabel("Emoji image").setInputFiles({ name: "dot.png", mimeType: "image/png", buffer: await png("#ff0000") });
    await emoji.getByRole("button", { name: "Add emoji" }).click();
    const row = emoji.getByRole("row").filter({ hasText: ":parley_dot:" });
    await row.getByRole("img", { name: ":parley_dot:" }).waitFor();
    await row.getByText("Adam Admin").waitFor();
    await row.getByRole("button", { name: "Deactivate :parley_dot:" }).click();
    await confirmDialog(adam, "Deactivate custom emoji?", "Deactivate");
    await row.waitFor({ state: "detached" });
    const realmEmoji = Object.values((await register(t.users.admin, ["realm_emoji"])).realm_emoji as Record<string, { name: string; deactivated: boolean }>);
    assert.equal(realmEmoji.find((e) => e.name === "parley_dot")?.deactivated, true);

    // The page's section list takes you to a section.
    await adam.getByRole("navigation", { name: "Organization settings sections" }).getByRole("button", { name: "Linkifiers" }).click();
    await waitFor("the Linkifiers heading has focus", async () => (await adam.evaluate(() => document.activeElement?.textContent)) === "Linkifiers");

    // Linkifiers: add two, edit one, reorder, delete.
    const linkifiers = adam.getByRole("region", { name: "Linkifiers" });
    const addLinkifier = async (pattern: string, url: string) => {
      await linkifiers.getByLabel("Pattern").fill(pattern);
      await linkifiers.getByLabel("URL template").fill(url);
      await linkifiers.getByRole("button", { name: "Add linkifier" }).click();
      await linkifiers.getByRole("table").getByText(pattern, { exact: true }).waitFor();
    };
    await addLinkifier("#(?P<id>[0-9]+)", "https://tracker.example.com/{id}");
    await addLinkifier("PR(?P<id>[0-9]+)", "https://git.example.com/pr/{id}");
    const linkifierList = async () =>
      (assertSuccess(await t.api(t.users.admin, "GET", "/realm/linkifiers")).linkifiers as { pattern: string; url_template: string }[]).map((l) => `${l.pattern} ${l.url_template}`);
    await linkifiers.getByRole("button", { name: "Edit #(?P<id>[0-9]+)" }).click();
    await linkifiers.getByRole("table").getByLabel("URL template").fill("https://tracker.example.com/issues/{id}");
    await linkifiers.getByRole("table").getByRole("button", { name: "Save" }).click();
    await linkifiers.getByText("https://tracker.example.com/issues/{id}").waitFor();
    await linkifiers.getByRole("button", { name: "Move PR(?P<id>[0-9]+) up" }).click();
    await waitFor("reordered", async () => (await linkifierList())[0] === "PR(?P<id>[0-9]+) https://git.example.com/pr/{id}");
    await waitFor("the table follows the order", async () => ((await linkifiers.getByRole("row").nth(1).textContent()) ?? "").includes("PR(?P<id>"));
    await linkifiers.getByRole("button", { name: "Delete PR(?P<id>[0-9]+)" }).click();
    await confirmDialog(adam, "Delete linkifier?", "Delete");
    await waitFor("deleted", async () => (await linkifierList()).join() === "#(?P<id>[0-9]+) https://tracker.example.com/issues/{id}");

    // Code playgrounds: add and delete.
    const playgrounds = adam.getByRole("region", { name: "Code playgrounds" });
    await playgrounds.getByLabel("Language").fill("Python");
    await playgrounds.getByLabel("Playground name").fill("Python sandbox");
    await playgrounds.getByLabel("URL template").fill("https://python.example.com/?code={code}");
    await playgrounds.getByRole("button", { name: "Add code playground" }).click();
    await playgrounds.getByRole("table").getByText("Python sandbox").waitFor();
    const playgroundNames = async () => ((await register(t.users.admin, ["realm_playgrounds"])).realm_playgrounds as { name: string }[]).map((p) => p.name);
    assert.deepEqual(await playgroundNames(), ["Python sandbox"]);
    await playgrounds.getByRole("button", { name: "Delete Python sandbox" }).click();
    await confirmDialog(adam, "Delete code playground?", "Delete");
    await playgrounds.getByRole("table").waitFor({ state: "detached" });
    assert.deepEqual(await playgroundNames(), []);

    // Default channels: add, then remove.
    const channelId = await h.createChannel("welcome", [t.users.admin]);
    const defaults = adam.getByRole("region", { name: "Default channels" });
    await defaults.getByLabel("Channel to add").selectOption({ label: "#welcome" });
    await defaults.getByRole("button", { name: "Add default channel" }).click();
    await defaults.getByRole("button", { name: "Remove #welcome" }).waitFor();
    const defaultIds = async () => (await register(t.users.admin, ["default_streams"])).realm_default_streams as number[];
    assert.ok((await defaultIds()).includes(channelId));
    await defaults.getByRole("button", { name: "Remove #welcome" }).click();
    await defaults.getByRole("button", { name: "Remove #welcome" }).waitFor({ state: "detached" });
    assert.ok(!(await defaultIds()).includes(channelId));

    // The organization icon: upload, then back to the default.
    const icon = adam.getByRole("region", { name: "Organization icon" });
    await icon.getByLabel("Icon image").setInputFiles({ name: "icon.png", mimeType: "image/png", buffer: await png("#0044aa") });
    await icon.getByRole("button", { name: "Delete icon" }).waitFor();
    assert.equal((await register(t.users.admin, ["realm"])).realm_icon_source, "U");
    await icon.getByRole("button", { name: "Delete icon" }).click();
    await confirmDialog(adam, "Delete the organization icon?", "Delete");
    await icon.getByRole("button", { name: "Delete icon" }).waitFor({ state: "detached" });
    assert.notEqual((await register(t.users.admin, ["realm"])).realm_icon_source, "U");
    assert.deepEqual(await axeFindings(adam), [], "organization settings: accessibility findings");
    assert.deepEqual(h.pageErrors, []);
  });

  test("user groups and bots: a member creates a group and edits its members; creates a bot, regenerates its key, deactivates it; an administrator sees every bot and reactivates it", async () => {
    const t = h.t;
    const max = await openPage(t.users.member, "#organization/organization-profile");
    // Members get the panels open to them, not the administrators' ones.
    await max.getByText("Only the organization's administrators can change its settings.").waitFor();
    const groups = max.getByRole("region", { name: "User groups" });
    await groups.waitFor();
    assert.equal(await max.getByRole("region", { name: "Linkifiers" }).count(), 0);
    assert.equal(await max.getByRole("region", { name: "Default channels" }).count(), 0);
    // Members may add custom emoji by default; when the organization restricts it to administrators, the form goes at once.
    const emoji = max.getByRole("region", { name: "Custom emoji" });
    await emoji.getByRole("button", { name: "Add emoji" }).waitFor();
    const groupsNow = (await register(t.users.owner, ["realm_user_groups"])).realm_user_groups as { id: number; name: string }[];
    const admins = groupsNow.find((g) => g.name === "role:administrators")!.id;
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { can_add_custom_emoji_group: { new: admins } }));
    await emoji.getByText("You may not add custom emoji in this organization.").waitFor();
    assert.equal(await emoji.getByRole("button", { name: "Add emoji" }).count(), 0);

    await groups.getByLabel("New group name").fill("backend");
    await groups.getByLabel("New group description").fill("Server people");
    await groups.getByRole("button", { name: "Create group" }).click();
    await groups.getByRole("button", { name: "Edit backend" }).click();
    const editor = groups.getByRole("group", { name: "Edit group backend" });
    await editor.getByLabel("Add a member").selectOption({ label: "Mona Moderator" });
    await editor.getByRole("list", { name: "Members of backend" }).getByText("Mona Moderator").waitFor();
    const group = async () => ((await register(t.users.member, ["realm_user_groups"])).realm_user_groups as { name: string; members: number[]; deactivated?: boolean }[]).find((g) => g.name === "backend");
    assert.deepEqual((await group())!.members.sort((a, b) => a - b), [t.users.moderator.id, t.users.member.id].sort((a, b) => a - b));
    await editor.getByRole("button", { name: "Remove Mona Moderator from backend" }).click();
    await editor.getByRole("list", { name: "Members of backend" }).getByText("Mona Moderator").waitFor({ state: "detached" });
    await editor.getByRole("button", { name: "Deactivate group" }).click();
    await confirmDialog(max, "Deactivate backend?", "Deactivate");
    await groups.getByRole("button", { name: "Edit backend" }).waitFor({ state: "detached" });

    // Bots, in the personal settings.
    await max.goto(`${t.url}/#settings/profile`);
    const bots = max.getByRole("region", { name: "Your bots" });
    await bots.getByLabel("Bot name").fill("Deploy Bot");
    await bots.getByLabel("Bot email (the part before -bot@)").fill("deploy");
    await bots.getByRole("button", { name: "Create bot" }).click();
    const key = bots.getByLabel("API key of Deploy Bot");
    await key.waitFor();
    const before = await key.inputValue();
    await bots.getByRole("button", { name: "Regenerate API key of Deploy Bot" }).click();
    await confirmDialog(max, "Generate a new API key for Deploy Bot?", "Generate new key");
    await waitFor("the new key shows", async () => (await key.inputValue()) !== before);
    await bots.getByRole("button", { name: "Deactivate Deploy Bot" }).click();
    await confirmDialog(max, "Deactivate Deploy Bot?", "Deactivate");
    await bots.getByRole("button", { name: "Reactivate Deploy Bot" }).waitFor();

    // The administrator sees every bot (Max's Bob Bot too) and reactivates Deploy Bot; Max sees it live.
    const adam = await openPage(t.users.admin, "#organization/organization-profile");
    const all = adam.getByRole("table", { name: "Bots" });
    await all.getByRole("row").filter({ hasText: "Bob Bot" }).waitFor();
    await all.getByRole("button", { name: "Reactivate Deploy Bot" }).click();
    await bots.getByRole("button", { name: "Deactivate Deploy Bot" }).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("at phone size the settings pages fit the screen: wide tables scroll inside themselves, the page never sideways", async () => {
    const t = h.t;
    const page = await h.newPage({ width: 390, height: 844 });
    await h.logIn(page, t.users.admin);
    for (const hash of ["#settings/profile", "#organization/organization-profile"]) {
      await page.goto(`${t.url}/${hash}`);
      await page.locator(".settings-section").nth(3).waitFor();
      const [scrollWidth, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      assert.ok(scrollWidth <= width, `${hash}: the page is ${scrollWidth}px wide on a ${width}px screen`);
      const sticking = await page.evaluate(() =>
        [...document.querySelectorAll("main *")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest(".table-scroll")).map((e) => `${e.tagName}.${e.className}`),
      );
      assert.deepEqual(sticking, [], `${hash}: elements past the screen's edge`);
    }
    assert.deepEqual(h.pageErrors, []);
  });

  test("users: roles change and people are deactivated after confirmation; administrators cannot touch owners, owners can", async () => {
    const t = h.t;
    const adam = await openPage(t.users.admin, "#organization/organization-profile");
    const users = adam.getByRole("table", { name: "Users" });
    await users.waitFor();
    // An administrator may not change an owner's role, deactivate an owner, or make anyone an owner.
    assert.equal(await users.getByLabel("Role of Olivia Owner").isDisabled(), true);
    assert.equal(await users.getByRole("button", { name: "Deactivate Olivia Owner" }).count(), 0);
    assert.equal(await users.getByLabel("Role of Gus Guest").locator("option", { hasText: "Owner" }).count(), 0);

    // Cancelling leaves the role alone; confirming saves it.
    await users.getByLabel("Role of Gus Guest").selectOption({ label: "Member" });
    await adam.getByRole("dialog", { name: "Change role of Gus Guest?" }).getByRole("button", { name: "Cancel" }).click();
    assert.equal(assertSuccess(await t.api(t.users.admin, "GET", `/users/${t.users.guest.id}`)).user.role, 600);
    await waitFor("the select shows the role again", async () => (await users.getByLabel("Role of Gus Guest").inputValue()) === "600");
    await users.getByLabel("Role of Gus Guest").selectOption({ label: "Member" });
    await confirmDialog(adam, "Change role of Gus Guest?", "Change role");
    await waitFor("role saved", async () => assertSuccess(await t.api(t.users.admin, "GET", `/users/${t.users.guest.id}`)).user.role === 400);

    // Deactivation asks first; reactivation brings the person back.
    await users.getByRole("button", { name: "Deactivate Gus Guest" }).click();
    await confirmDialog(adam, "Deactivate Gus Guest?", "Deactivate");
    await users.getByRole("button", { name: "Reactivate Gus Guest" }).click();
    await users.getByRole("button", { name: "Deactivate Gus Guest" }).waitFor();
    assert.equal(assertSuccess(await t.api(t.users.admin, "GET", `/users/${t.users.guest.id}`)).user.is_active, true);

    // The owner may make someone an owner.
    const olivia = await openPage(t.users.owner, "#organization/organization-profile");
    const ownersView = olivia.getByRole("table", { name: "Users" });
    await ownersView.getByLabel("Role of Adam Admin").selectOption({ label: "Owner" });
    await confirmDialog(olivia, "Change role of Adam Admin?", "Change role");
    await waitFor("Adam is an owner", async () => assertSuccess(await t.api(t.users.owner, "GET", `/users/${t.users.admin.id}`)).user.role === 100);
    // Adam's own page follows: he now may change owners (but never his own role).
    await waitFor("Olivia's role is open to Adam now", async () => !(await users.getByLabel("Role of Olivia Owner").isDisabled()));
    assert.equal(await users.getByLabel("Role of Adam Admin").isDisabled(), true);
    assert.deepEqual(h.pageErrors, []);
  });
});
