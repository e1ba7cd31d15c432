// The web client's pages beyond the message list, in a real browser: the
// channel browser, people with presence and status, personal settings, and
// the organization settings — including signing up through an invitation
// link made there, which lands the newcomer signed in.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BrowserHarness, channelLink, sidebar, waitFor } from "./browser.ts";
import { assertSuccess } from "./helpers.ts";

const h = new BrowserHarness();
before(() => h.start());
after(() => h.close());

describe("web client: pages", () => {
  test("the channel browser subscribes, unsubscribes and creates; administrators rename, seen live elsewhere", async () => {
    const t = h.t;
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "announcements", description: "News for all" }] }));
    const max = await h.newPage();
    await h.logIn(max, t.users.member);
    await sidebar(max).getByRole("link", { name: "Browse channels" }).click();
    const row = max.getByRole("listitem", { name: "announcements" });
    await row.getByText("News for all").waitFor();
    await row.getByRole("button", { name: "Subscribe" }).click();
    await channelLink(max, "announcements").waitFor();
    await row.getByRole("button", { name: "Unsubscribe" }).click();
    await channelLink(max, "announcements").waitFor({ state: "hidden" });

    await max.getByRole("button", { name: "Create channel" }).click();
    const form = max.getByRole("form", { name: "New channel" });
    await form.getByLabel("Channel name").fill("book club");
    await form.getByLabel("Description").fill("What we read");
    await form.getByRole("button", { name: "Create" }).click();
    await channelLink(max, "book club").waitFor();
    const created = assertSuccess(await t.api(t.users.member, "GET", "/get_stream_id", { stream: "book club" }));
    assert.ok(created.stream_id > 0);
    // Members do not get the administrators' Edit button.
    assert.equal(await max.getByRole("listitem", { name: "book club" }).getByRole("button", { name: "Edit" }).count(), 0);

    const adam = await h.newPage();
    await h.logIn(adam, t.users.admin);
    await adam.goto(`${t.url}/#channels/all`);
    const adminRow = adam.getByRole("listitem", { name: "book club" });
    await adminRow.getByRole("button", { name: "Edit" }).click();
    const settings = adam.getByRole("form", { name: "Settings of book club" });
    await settings.getByLabel("Channel name").fill("reading club");
    await settings.getByRole("button", { name: "Save" }).click();
    // Max sees the rename in the sidebar without reloading.
    await channelLink(max, "reading club").waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("the sidebar groups channels by folder, and follows folder changes live", async () => {
    const t = h.t;
    const backend = await h.createChannel("backend", [t.users.member]);
    await h.createChannel("random", [t.users.member]);
    const folder = assertSuccess(await t.api(t.users.admin, "POST", "/channel_folders/create", { name: "Engineering", description: "" })).channel_folder_id as number;
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${backend}`, { folder_id: folder }));
    const max = await h.newPage();
    await h.logIn(max, t.users.member);
    const engineering = sidebar(max).getByRole("list", { name: "Engineering" });
    await engineering.getByRole("link", { name: "backend", exact: true }).waitFor();
    const others = sidebar(max).getByRole("list", { name: "Other channels" });
    await others.getByRole("link", { name: "random", exact: true }).waitFor();
    // A rename of the folder and a channel moved into it arrive as events.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${folder}`, { name: "Eng" }));
    const eng = sidebar(max).getByRole("list", { name: "Eng" });
    await eng.getByRole("link", { name: "backend", exact: true }).waitFor();
    const random = assertSuccess(await t.api(t.users.member, "GET", "/get_stream_id", { stream: "random" })).stream_id as number;
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${random}`, { folder_id: folder }));
    await eng.getByRole("link", { name: "random", exact: true }).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("people: presence and status, live", async () => {
    const t = h.t;
    const max = await h.newPage();
    await h.logIn(max, t.users.member);
    await max.goto(`${t.url}/#people`);
    const me = max.getByRole("listitem", { name: "Max Member" });
    // This page reported Max's presence: Max is active.
    await me.getByRole("img", { name: "Active" }).waitFor();
    assert.equal(await max.getByRole("listitem", { name: "Gus Guest" }).getByRole("img", { name: "Offline" }).count(), 1);
    assertSuccess(await t.api(t.users.guest, "POST", "/users/me/status", { status_text: "On holiday", emoji_name: "palm_tree" }));
    await max.getByRole("listitem", { name: "Gus Guest" }).getByText("On holiday").waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("personal settings: name, theme and password", async () => {
    const t = h.t;
    const mona = await h.newPage();
    await h.logIn(mona, t.users.moderator);
    await mona.getByRole("button", { name: "Mona Moderator" }).click();
    await mona.getByRole("menuitem", { name: "Personal settings" }).click();
    // Moderators are not administrators: no organization settings in the menu.
    await mona.getByRole("button", { name: "Mona Moderator" }).click();
    assert.equal(await mona.getByRole("menuitem", { name: "Organization settings" }).count(), 0);
    await mona.keyboard.press("Escape");

    await mona.getByLabel("Name", { exact: true }).fill("Mona M. Moderator");
    await mona.getByRole("button", { name: "Save name" }).click();
    await mona.getByRole("button", { name: "Mona M. Moderator" }).waitFor();

    await mona.getByLabel("Dark").check();
    await waitFor("dark theme", async () => (await mona.evaluate(() => document.documentElement.dataset.theme)) === "dark");
    const state = assertSuccess(await t.api(t.users.moderator, "POST", "/register", { fetch_event_types: ["user_settings"] }));
    assert.equal(state.user_settings.color_scheme, 2);
    await mona.screenshot({ path: "/tmp/web-settings-dark.png" });
    await mona.getByLabel("Automatic (follow the system)").check();
    await waitFor("light theme again", async () => (await mona.evaluate(() => document.documentElement.dataset.theme)) === "light");

    await mona.getByLabel("Current password").fill("wrong-password");
    await mona.getByLabel("New password", { exact: true }).fill("a-new-long-password");
    await mona.getByRole("button", { name: "Change password" }).click();
    await mona.getByRole("alert").waitFor();
    await mona.getByLabel("Current password").fill(t.users.moderator.password);
    await mona.getByRole("button", { name: "Change password" }).click();
    await mona.getByText("Password: saved.").waitFor();
    const login = await fetch(`${t.url}/api/v1/fetch_api_key`, { method: "POST", body: new URLSearchParams({ username: t.users.moderator.email, password: "a-new-long-password" }) });
    assert.equal(login.status, 200);
    assert.deepEqual(h.pageErrors, []);
  });

  test("organization settings: an administrator makes an invitation link; the newcomer signs up through it and lands signed in", async () => {
    const t = h.t;
    const max = await h.newPage();
    await h.logIn(max, t.users.member);
    await max.goto(`${t.url}/#organization/organization-profile`);
    await max.getByText("Only the organization's administrators can change its settings.").waitFor();

    const olivia = await h.newPage();
    await h.logIn(olivia, t.users.owner);
    await olivia.getByRole("button", { name: "Olivia Owner" }).click();
    await olivia.getByRole("menuitem", { name: "Organization settings" }).click();
    await olivia.getByRole("button", { name: "Create invitation link" }).click();
    const linkField = olivia.getByLabel("Invitation link");
    await linkField.waitFor();
    const link = await linkField.inputValue();
    assert.match(link, /\/join\/[^/]+\/?$/);
    await olivia.getByRole("table", { name: "Pending invitations" }).waitFor();

    // The newcomer, in a browser of their own.
    const newcomer = await h.newPage();
    await newcomer.goto(t.url + new URL(link).pathname);
    await newcomer.getByLabel("Email").fill("nina@example.com");
    await newcomer.getByLabel("Full name").fill("Nina Newcomer");
    await newcomer.getByLabel("Password").fill("ninas-password-1");
    await newcomer.getByRole("button", { name: "Sign up" }).click();
    await sidebar(newcomer).waitFor();
    await newcomer.getByRole("button", { name: "Nina Newcomer" }).waitFor();

    // The owner sees the new person in the users table at once (realm_user event), and makes her a moderator.
    const users = olivia.getByRole("table", { name: "Users" });
    const role = users.getByLabel("Role of Nina Newcomer");
    await role.waitFor();
    await role.selectOption({ label: "Moderator" });
    await olivia.getByRole("dialog", { name: "Change role of Nina Newcomer?" }).getByRole("button", { name: "Change role" }).click();
    const nina = assertSuccess(await t.api(t.users.owner, "GET", "/users/nina@example.com"));
    await waitFor("role saved", async () => assertSuccess(await t.api(t.users.owner, "GET", `/users/${nina.user.user_id}`)).user.role === 300);

    // A plain organization setting, saved through PATCH /realm and shown from the realm event.
    const inviteRequired = olivia.getByLabel("Invitations are required to join");
    const before = await inviteRequired.isChecked();
    await inviteRequired.click();
    await waitFor("invite_required saved", async () => assertSuccess(await t.api(t.users.owner, "POST", "/register", { fetch_event_types: ["realm"] })).realm_invite_required === !before);
    await waitFor("checkbox follows the event", async () => (await inviteRequired.isChecked()) === !before);

    // The organization's name, changed here, is the tab title's ending everywhere.
    await olivia.getByLabel("Organization name").fill("Renamed Org");
    await olivia.getByRole("button", { name: "Save organization profile" }).click();
    await waitFor("title follows the rename", async () => (await newcomer.title()).includes("Renamed Org"));
    assert.deepEqual(h.pageErrors, []);
  });
});
