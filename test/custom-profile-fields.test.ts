// Custom profile fields: GET/POST/PATCH (reorder) /realm/profile_fields,
// PATCH/DELETE /realm/profile_fields/{field_id}, PATCH/DELETE
// /users/me/profile_data and administrators' profile_data on PATCH
// /users/{user_id} — reply shapes, Zulip's validation messages for field
// definitions and for every value type, permissions per role, the
// custom_profile_fields and realm_user events (payload and recipients),
// profile_data in user objects and /register's state.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());
beforeEach(async () => {
  // Fields belong to the organization: each test starts without any.
  for (const f of await listFields()) assertSuccess(await t.api(t.users.owner, "DELETE", `/realm/profile_fields/${f.id}`));
  t.clearEvents();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const listFields = async (user: TestUser = t.users.owner): Promise<Json[]> => assertSuccess(await t.api(user, "GET", "/realm/profile_fields")).custom_fields;
const create = (params: Record<string, unknown>, user: TestUser = t.users.admin) => t.api(user, "POST", "/realm/profile_fields", params);
async function createOk(params: Record<string, unknown>): Promise<number> {
  const body = assertSuccess(await create(params));
  assert.deepEqual(Object.keys(body).sort(), ["id", "msg", "result"]);
  assert.equal(typeof body.id, "number");
  return body.id;
}
const update = (id: number | string, params: Record<string, unknown>, user: TestUser = t.users.admin) => t.api(user, "PATCH", `/realm/profile_fields/${id}`, params);
const remove = (id: number | string, user: TestUser = t.users.admin) => t.api(user, "DELETE", `/realm/profile_fields/${id}`);
const reorder = (order: unknown, user: TestUser = t.users.admin) => t.api(user, "PATCH", "/realm/profile_fields", { order });
const setOwn = (user: TestUser, data: unknown) => t.api(user, "PATCH", "/users/me/profile_data", { data });
const removeOwn = (user: TestUser, data: unknown) => t.api(user, "DELETE", "/users/me/profile_data", { data });
const profileOf = async (user: TestUser, viewer: TestUser = t.users.owner): Promise<Json> =>
  assertSuccess(await t.api(viewer, "GET", `/users/${user.id}`, { include_custom_profile_fields: true })).user.profile_data;

const SELECT_DATA = { "0": { text: "Vim", order: "1" }, "1": { text: "Emacs", order: "2" } };
const fieldsEvents = () => t.events.filter((n) => n.event.type === "custom_profile_fields").map((n) => ({ event: n.event, userIds: [...n.userIds].sort((a, b) => a - b) }));
const valueEvents = () =>
  t.events.filter((n) => n.event.type === "realm_user" && "custom_profile_field" in (n.event.person as object)).map((n) => ({ event: n.event, userIds: [...n.userIds].sort((a, b) => a - b) }));

/** One field of every type; returns their IDs by type. */
async function oneOfEach(): Promise<Json> {
  return {
    1: await createOk({ name: "Title", field_type: 1, hint: "Your role" }),
    2: await createOk({ name: "Biography", field_type: 2 }),
    3: await createOk({ name: "Editor", field_type: 3, field_data: SELECT_DATA }),
    4: await createOk({ name: "Birthday", field_type: 4 }),
    5: await createOk({ name: "Website", field_type: 5 }),
    6: await createOk({ name: "Mentor", field_type: 6 }),
    7: await createOk({ name: "GitLab", field_type: 7, field_data: { subtype: "custom", url_pattern: "https://gitlab.com/%(username)s" } }),
    8: await createOk({ name: "Pronouns", field_type: 8 }),
  };
}

describe("creating and listing fields", () => {
  test("every type: the reply is the ID; GET lists every attribute in order, field_data as Zulip's JSON text", async () => {
    const ids = await oneOfEach();
    const summary = await createOk({ name: " Team ", field_type: 1, display_in_profile_summary: true, required: true, editable_by_user: false });
    const base = { hint: "", field_data: "", required: false, editable_by_user: true };
    assert.deepEqual(await listFields(), [
      { ...base, id: ids[1], name: "Title", type: 1, hint: "Your role", order: ids[1] },
      { ...base, id: ids[2], name: "Biography", type: 2, order: ids[2] },
      { ...base, id: ids[3], name: "Editor", type: 3, field_data: JSON.stringify(SELECT_DATA), order: ids[3] },
      { ...base, id: ids[4], name: "Birthday", type: 4, order: ids[4] },
      { ...base, id: ids[5], name: "Website", type: 5, order: ids[5] },
      { ...base, id: ids[6], name: "Mentor", type: 6, order: ids[6] },
      { ...base, id: ids[7], name: "GitLab", type: 7, field_data: '{"subtype":"custom","url_pattern":"https://gitlab.com/%(username)s"}', order: ids[7] },
      { ...base, id: ids[8], name: "Pronouns", type: 8, order: ids[8] },
      { ...base, id: summary, name: "Team", type: 1, order: summary, required: true, editable_by_user: false, display_in_profile_summary: true },
    ]);
  });

  test("field_data is ignored for types without data; unknown parameters are reported", async () => {
    const body = assertSuccess(await create({ name: "Plain", field_type: 1, field_data: SELECT_DATA, colour: "red" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["colour"]);
    assert.equal((await listFields())[0].field_data, "");
  });

  test("a default external account takes the server's label and hint; its data keeps only the subtype", async () => {
    const github = await createOk({ name: "ignored", hint: "ignored too", field_type: 7, field_data: { subtype: "github", url_pattern: "https://example.com/%(username)s" } });
    const twitter = await createOk({ field_type: 7, field_data: { subtype: "twitter" } });
    const [g, tw] = await listFields();
    assert.deepEqual(g, { id: github, name: "GitHub username", type: 7, hint: "", field_data: '{"subtype":"github"}', order: github, required: false, editable_by_user: true });
    assert.equal(tw.id, twitter);
    assert.equal(tw.name, "Twitter username");
    assertError(await create({ field_type: 7, field_data: { subtype: "github" } }), 400, "BAD_REQUEST", "A field with that label already exists.");
  });

  test("label and hint: stripped label, blank, too long, duplicate", async () => {
    assertError(await create({ field_type: 1 }), 400, "BAD_REQUEST", "Label cannot be blank.");
    assertError(await create({ name: " \t ", field_type: 1 }), 400, "BAD_REQUEST", "Label cannot be blank.");
    assertError(await create({ name: "n".repeat(41), field_type: 1 }), 400, "BAD_REQUEST", "name is too long (limit: 40 characters)");
    assertError(await create({ name: "ok", hint: "h".repeat(81), field_type: 1 }), 400, "BAD_REQUEST", "hint is too long (limit: 80 characters)");
    await createOk({ name: "😀".repeat(40), hint: "h".repeat(80), field_type: 1 });
    await createOk({ name: "Phone", field_type: 1 });
    assertError(await create({ name: "  Phone ", field_type: 5 }), 400, "BAD_REQUEST", "A field with that label already exists.");
    await createOk({ name: "phone", field_type: 1 }); // labels are case-sensitive, as Zulip's unique constraint
    assert.equal((await listFields()).length, 3);
  });

  test("field_type: required, an integer, one of 1 to 8", async () => {
    assertError(await create({ name: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'field_type' argument", { var_name: "field_type" });
    assertError(await create({ name: "x", field_type: "one" }), 400, "BAD_REQUEST", "field_type is not an integer");
    assertError(await create({ name: "x", field_type: 9 }), 400, "BAD_REQUEST", "Invalid field type.");
    assertError(await create({ name: "x", field_type: 0 }), 400, "BAD_REQUEST", "Invalid field type.");
    assertError(await create({ name: "x", field_type: 1, required: "yes" }), 400, "BAD_REQUEST", 'Argument "required" is not valid JSON.');
    assertError(await create({ name: "x", field_type: 1, editable_by_user: 1 }), 400, "BAD_REQUEST", "editable_by_user is not a boolean");
    assertError(await create({ name: "x", field_type: 1, display_in_profile_summary: "[]" }), 400, "BAD_REQUEST", "display_in_profile_summary is not a boolean");
    assert.deepEqual(await listFields(), []);
  });

  test("list of options: at least one, {text, order} each, no blank keys or texts, no duplicate texts", async () => {
    const bad = (field_data: unknown) => create({ name: "Choice", field_type: 3, field_data });
    assertError(await create({ name: "Choice", field_type: 3 }), 400, "BAD_REQUEST", "Field must have at least one choice.");
    assertError(await bad({}), 400, "BAD_REQUEST", "Field must have at least one choice.");
    assertError(await bad([]), 400, "BAD_REQUEST", "field_data is not a dict");
    assertError(await bad("x"), 400, "BAD_REQUEST", 'Argument "field_data" is not valid JSON.');
    assertError(await bad({ " ": { text: "A", order: "1" } }), 400, "BAD_REQUEST", "'value' cannot be blank.");
    assertError(await bad({ a: { order: "1" } }), 400, "BAD_REQUEST", "text key is missing from field_data");
    assertError(await bad({ a: { text: "A" } }), 400, "BAD_REQUEST", "order key is missing from field_data");
    assertError(await bad({ a: { text: " ", order: "1" } }), 400, "BAD_REQUEST", 'field_data["text"] cannot be blank.');
    assertError(await bad({ a: { text: "A", order: "1", colour: "red" } }), 400, "BAD_REQUEST", "Unexpected arguments: colour");
    assertError(await bad({ a: "A" }), 400, "BAD_REQUEST", "field_data is not a dict");
    assertError(await bad({ a: { text: 1, order: "1" } }), 400, "BAD_REQUEST", 'field_data["a"]["text"] is not a string');
    assertError(await bad({ a: { text: "A", order: "1" }, b: { text: "A", order: "2" } }), 400, "BAD_REQUEST", "Field must not have duplicate choices.");
    assert.deepEqual(await listFields(), []);
  });

  test("external account: subtype required and known; custom ones need a URL pattern with %(username)s", async () => {
    const bad = (field_data: unknown) => create({ name: "Account", field_type: 7, field_data });
    assertError(await create({ name: "Account", field_type: 7 }), 400, "BAD_REQUEST", "subtype key is missing from field_data");
    assertError(await bad({ subtype: "" }), 400, "BAD_REQUEST", 'field_data["subtype"] cannot be blank.');
    assertError(await bad({ subtype: "myspace" }), 400, "BAD_REQUEST", "Invalid external account type");
    assertError(await bad({ subtype: "custom" }), 400, "BAD_REQUEST", "Custom external account must define URL pattern");
    assertError(await bad({ subtype: "custom", url_pattern: "https://example.com/user" }), 400, "BAD_REQUEST", "URL pattern must contain '%(username)s'.");
    assertError(await bad({ subtype: "custom", url_pattern: "https://x.com/%(username)s/%(username)s" }), 400, "BAD_REQUEST", "URL pattern must contain '%(username)s'.");
    assertError(await bad({ subtype: "custom", url_pattern: "not a url %(username)s" }), 400, "BAD_REQUEST", 'field_data["url_pattern"] is not a URL');
    assertError(await bad({ subtype: "custom", url_pattern: "https://x.com/%(username)s", extra: "1" }), 400, "BAD_REQUEST", "Unexpected arguments: extra");
    // An empty pattern is allowed, as in Zulip.
    await createOk({ name: "Account", field_type: 7, field_data: { subtype: "custom", url_pattern: "" } });
  });

  test("profile summary: at most 2 fields, never Long text or Person picker", async () => {
    assertError(await create({ name: "Bio", field_type: 2, display_in_profile_summary: true }), 400, "BAD_REQUEST", "Field type not supported for display in profile summary.");
    assertError(await create({ name: "Boss", field_type: 6, display_in_profile_summary: true }), 400, "BAD_REQUEST", "Field type not supported for display in profile summary.");
    await createOk({ name: "One", field_type: 1, display_in_profile_summary: true });
    await createOk({ name: "Two", field_type: 8, display_in_profile_summary: true });
    assertError(await create({ name: "Three", field_type: 4, display_in_profile_summary: true }), 400, "BAD_REQUEST", "Only 2 custom profile fields can be displayed in the profile summary.");
    await createOk({ name: "Three", field_type: 4, display_in_profile_summary: false });
    assert.equal((await listFields()).filter((f) => f.display_in_profile_summary).length, 2);
  });

  test("creating sends the whole list to every active user", async () => {
    const id = await createOk({ name: "Title", field_type: 1 });
    const all = await t.activeUserIds();
    assert.deepEqual(fieldsEvents(), [{ event: { type: "custom_profile_fields", fields: await listFields() }, userIds: all }]);
    assert.equal((fieldsEvents()[0]!.event as Json).fields[0].id, id);
    t.clearEvents();
    await create({ name: "Title", field_type: 1 });
    assert.deepEqual(fieldsEvents(), [], "a failed request sends nothing");
  });
});

describe("permissions", () => {
  test("only owners and administrators change fields; every role, bots included, reads them", async () => {
    const id = await createOk({ name: "Title", field_type: 1 });
    assertSuccess(await create({ name: "By owner", field_type: 1 }, t.users.owner));
    for (const user of [t.users.moderator, t.users.member, t.users.guest, t.users.bot]) {
      const denied = (r: Json) => assertError(r, 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      denied(await create({ name: "Nope", field_type: 1 }, user));
      denied(await update(id, { name: "Nope" }, user));
      denied(await remove(id, user));
      denied(await reorder([id], user));
      assert.equal((await listFields(user)).length, 2);
    }
    assertSuccess(await update(id, { hint: "by owner" }, t.users.owner));
    assert.equal((await listFields())[0].hint, "by owner");
  });
});

describe("updating, deleting and reordering fields", () => {
  test("PATCH changes what it is given and keeps the rest", async () => {
    const id = await createOk({ name: "Title", field_type: 1, hint: "old hint", required: true });
    t.clearEvents();
    assertSuccess(await update(id, { name: "  Job title ", editable_by_user: false, display_in_profile_summary: true }));
    const [field] = await listFields();
    assert.deepEqual(field, { id, name: "Job title", type: 1, hint: "old hint", field_data: "", order: id, required: true, editable_by_user: false, display_in_profile_summary: true });
    assert.deepEqual(fieldsEvents(), [{ event: { type: "custom_profile_fields", fields: [field] }, userIds: await t.activeUserIds() }]);
    assertSuccess(await update(id, { hint: "", required: false, display_in_profile_summary: false }));
    assert.deepEqual(await listFields(), [{ id, name: "Job title", type: 1, hint: "", field_data: "", order: id, required: false, editable_by_user: false }]);
    // Its own label again is no conflict.
    assertSuccess(await update(id, { name: "Job title" }));
  });

  test("PATCH errors: unknown field, blank or long label, taken label, summary rules", async () => {
    const id = await createOk({ name: "Title", field_type: 1 });
    const bio = await createOk({ name: "Bio", field_type: 2 });
    assertError(await update(999999, { name: "x" }), 400, "BAD_REQUEST", "Field id 999999 not found.");
    assertError(await update(99999999999, { name: "x" }), 400, "BAD_REQUEST", "Field id 99999999999 not found.");
    assertError(await update("abc", { name: "x" }), 400, "BAD_REQUEST", "field_id is not an integer");
    assertError(await update(id, { name: "  " }), 400, "BAD_REQUEST", "Label cannot be blank.");
    assertError(await update(id, { name: "n".repeat(41) }), 400, "BAD_REQUEST", "name is too long (limit: 40 characters)");
    assertError(await update(id, { hint: "h".repeat(81) }), 400, "BAD_REQUEST", "hint is too long (limit: 80 characters)");
    assertError(await update(id, { name: "Bio" }), 400, "BAD_REQUEST", "A field with that label already exists.");
    assertError(await update(bio, { display_in_profile_summary: true }), 400, "BAD_REQUEST", "Field type not supported for display in profile summary.");
    assertError(await update(id, { required: "no" }), 400, "BAD_REQUEST", 'Argument "required" is not valid JSON.');
    const a = await createOk({ name: "A", field_type: 1, display_in_profile_summary: true });
    await createOk({ name: "B", field_type: 1, display_in_profile_summary: true });
    assertError(await update(id, { display_in_profile_summary: true }), 400, "BAD_REQUEST", "Only 2 custom profile fields can be displayed in the profile summary.");
    // A field already shown does not count against itself.
    assertSuccess(await update(a, { display_in_profile_summary: true }));
    assert.equal((await listFields()).find((f) => f.id === id).name, "Title");
  });

  test("default external accounts: only the summary flag may change", async () => {
    const id = await createOk({ field_type: 7, field_data: { subtype: "github" } });
    assertError(await update(id, { name: "Code" }), 400, "BAD_REQUEST", "Default custom field cannot be updated.");
    assertError(await update(id, { hint: "h" }), 400, "BAD_REQUEST", "Default custom field cannot be updated.");
    assertError(await update(id, { field_data: { subtype: "twitter" } }), 400, "BAD_REQUEST", "Default custom field cannot be updated.");
    assertSuccess(await update(id, { name: "GitHub username", hint: "", field_data: { subtype: "github" }, display_in_profile_summary: true }));
    assert.equal((await listFields())[0].display_in_profile_summary, true);
  });

  test("changing options: values of removed options are dropped and their owners' watchers told", async () => {
    const id = await createOk({ name: "Editor", field_type: 3, field_data: SELECT_DATA });
    const [vim, emacs] = [await t.createUser(uniqueName("Vimmer")), await t.createUser(uniqueName("Emacser"))];
    assertSuccess(await setOwn(vim, [{ id, value: "0" }]));
    assertSuccess(await setOwn(emacs, [{ id, value: "1" }]));
    t.clearEvents();
    const newData = { "1": { text: "Emacs", order: "1" }, "2": { text: "Nano", order: "2" } };
    assertSuccess(await update(id, { field_data: newData }));
    assert.equal((await listFields())[0].field_data, JSON.stringify(newData));
    assert.deepEqual(await profileOf(vim), {});
    assert.deepEqual(await profileOf(emacs), { [id]: { value: "1" } });
    const all = await t.activeUserIds();
    assert.deepEqual(valueEvents(), [{ event: { type: "realm_user", op: "update", person: { user_id: vim.id, custom_profile_field: { id, value: null } } }, userIds: all }]);
    assert.equal(fieldsEvents().length, 1);
    assertError(await update(id, { field_data: {} }), 400, "BAD_REQUEST", "Field must have at least one choice.");
  });

  test("DELETE removes the field and every value of it", async () => {
    const id = await createOk({ name: "Title", field_type: 1 });
    const keep = await createOk({ name: "Keep", field_type: 1 });
    assertSuccess(await setOwn(t.users.member, [{ id, value: "Engineer" }, { id: keep, value: "kept" }]));
    t.clearEvents();
    assertSuccess(await remove(id));
    assert.deepEqual((await listFields()).map((f) => f.id), [keep]);
    assert.deepEqual(Object.keys(await profileOf(t.users.member)), [String(keep)]);
    assert.deepEqual(fieldsEvents(), [{ event: { type: "custom_profile_fields", fields: await listFields() }, userIds: await t.activeUserIds() }]);
    assertError(await remove(id), 400, "BAD_REQUEST", `Field id ${id} not found.`);
    assertError(await remove(99999999999), 400, "BAD_REQUEST", "Field id 99999999999 not found.");
  });

  test("reorder: positions from the list, which must name every field", async () => {
    const [a, b, c] = [await createOk({ name: "A", field_type: 1 }), await createOk({ name: "B", field_type: 1 }), await createOk({ name: "C", field_type: 1 })];
    t.clearEvents();
    assertSuccess(await reorder([c, a, b]));
    const fields = await listFields();
    assert.deepEqual(fields.map((f) => [f.id, f.order]), [[c, 0], [a, 1], [b, 2]]);
    assert.deepEqual(fieldsEvents(), [{ event: { type: "custom_profile_fields", fields }, userIds: await t.activeUserIds() }]);
    assertError(await reorder([c, a]), 400, "BAD_REQUEST", "Invalid order mapping.");
    assertError(await reorder([]), 400, "BAD_REQUEST", "Invalid order mapping.");
    assertError(await t.api(t.users.admin, "PATCH", "/realm/profile_fields", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'order' argument");
    assertError(await reorder(["a"]), 400, "BAD_REQUEST", "order[0] is not an integer");
    // IDs of no field are ignored.
    assertSuccess(await reorder([b, 999999, c, a]));
    assert.deepEqual((await listFields()).map((f) => f.id), [b, c, a]);
    // A new field goes last.
    const d = await createOk({ name: "D", field_type: 1 });
    assert.deepEqual((await listFields()).map((f) => f.id), [b, c, a, d]);
  });
});

describe("users' values", () => {
  test("valid values of every type; GET shows rendered_value for the text types only", async () => {
    const ids = await oneOfEach();
    const user = await t.createUser(uniqueName("Valued"));
    assertSuccess(
      await setOwn(user, [
        { id: ids[1], value: "Lead **engineer**" },
        { id: ids[2], value: "Line one\n\n*line two*" },
        { id: ids[3], value: "1" },
        { id: ids[4], value: "2000-02-29" },
        { id: ids[5], value: "https://example.com/me?x=1" },
        { id: ids[6], value: [t.users.admin.id, t.users.member.id] },
        { id: ids[7], value: "octo" },
        { id: ids[8], value: "they/them" },
      ]),
    );
    const expected = {
      [ids[1]]: { value: "Lead **engineer**", rendered_value: "<p>Lead <strong>engineer</strong></p>" },
      [ids[2]]: { value: "Line one\n\n*line two*", rendered_value: "<p>Line one</p>\n<p><em>line two</em></p>" },
      [ids[3]]: { value: "1" },
      [ids[4]]: { value: "2000-02-29" },
      [ids[5]]: { value: "https://example.com/me?x=1" },
      [ids[6]]: { value: `[${t.users.admin.id},${t.users.member.id}]` },
      [ids[7]]: { value: "octo" },
      [ids[8]]: { value: "they/them" },
    };
    assert.deepEqual(await profileOf(user), expected);
    assert.deepEqual(await profileOf(user, t.users.guest), expected, "every user sees them");
    assert.deepEqual(assertSuccess(await t.api(user, "GET", "/users/me")).profile_data, expected);
    const members = assertSuccess(await t.api(t.users.member, "GET", "/users", { include_custom_profile_fields: true })).members;
    assert.deepEqual(members.find((m: Json) => m.user_id === user.id).profile_data, expected);
    assert.deepEqual(members.find((m: Json) => m.user_id === t.users.moderator.id).profile_data, {});
    assert.equal("profile_data" in members.find((m: Json) => m.user_id === t.users.bot.id), false, "bots have no profile_data");
    const plain = assertSuccess(await t.api(t.users.member, "GET", "/users")).members;
    assert.equal(plain.some((m: Json) => "profile_data" in m), false);
  });

  test("invalid values, with Zulip's messages naming the field", async () => {
    const ids = await oneOfEach();
    const user = await t.createUser(uniqueName("Invalid"));
    const bad = async (id: number, value: unknown, msg: string) => assertError(await setOwn(user, [{ id, value }]), 400, "BAD_REQUEST", msg);
    await bad(ids[1], "x".repeat(51), "Title is too long (limit: 50 characters)");
    await bad(ids[1], [1], "Title is not a string");
    await bad(ids[2], "x".repeat(501), "Biography is too long (limit: 500 characters)");
    await bad(ids[3], "7", "'7' is not a valid choice for 'Editor'.");
    await bad(ids[3], "Vim", "'Vim' is not a valid choice for 'Editor'.");
    await bad(ids[4], "2001-02-29", "Birthday is not a date");
    await bad(ids[4], "2000-2-1", "Birthday is not a date");
    await bad(ids[4], "yesterday", "Birthday is not a date");
    await bad(ids[5], "example.com", "Website is not a URL");
    await bad(ids[5], "javascript:alert(1)", "Website is not a URL");
    await bad(ids[5], "https://exa mple.com", "Website is not a URL");
    await bad(ids[6], "1", "User IDs is not a list");
    await bad(ids[6], [999999, t.users.member.id, 999998], "Invalid user IDs: 999999, 999998");
    await bad(ids[6], [t.users.bot.id], `User with ID ${t.users.bot.id} is a bot`);
    const gone = await t.createUser(uniqueName("Gone"));
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${gone.id}`));
    await bad(ids[6], [gone.id], `User with ID ${gone.id} is deactivated`);
    await bad(ids[7], "x".repeat(51), "GitLab is too long (limit: 50 characters)");
    await bad(ids[8], "x".repeat(51), "Pronouns is too long (limit: 50 characters)");
    await bad(999999, "x", "Field id 999999 not found.");
    assertError(await setOwn(user, [{ id: ids[1], value: 5 }]), 400, "BAD_REQUEST", 'data[0]["value"] is not an allowed_type');
    assertError(await setOwn(user, [{ id: ids[1], value: null }]), 400, "BAD_REQUEST", 'data[0]["value"] is not an allowed_type');
    assertError(await setOwn(user, [{ id: ids[1] }]), 400, "BAD_REQUEST", "value key is missing from data[0]");
    assertError(await setOwn(user, [{ value: "x" }]), 400, "BAD_REQUEST", "id key is missing from data[0]");
    assertError(await setOwn(user, [{ id: ids[1], value: "x", extra: 1 }]), 400, "BAD_REQUEST", "Unexpected arguments: extra");
    assertError(await setOwn(user, [{ id: "1", value: "x" }]), 400, "BAD_REQUEST", 'data[0]["id"] is not an integer');
    assertError(await setOwn(user, { id: ids[1], value: "x" }), 400, "BAD_REQUEST", "data is not a list");
    assertError(await t.api(user, "PATCH", "/users/me/profile_data", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'data' argument", { var_name: "data" });
    // One bad entry fails the whole request.
    assertError(await setOwn(user, [{ id: ids[1], value: "fine" }, { id: ids[4], value: "bad" }]), 400, "BAD_REQUEST", "Birthday is not a date");
    assert.deepEqual(await profileOf(user), {});
    assert.deepEqual(valueEvents(), []);
  });

  test("edge values: the longest allowed, empty text, an empty user list", async () => {
    const ids = await oneOfEach();
    const user = await t.createUser(uniqueName("Edge"));
    assertSuccess(await setOwn(user, [{ id: ids[1], value: "😀".repeat(50) }, { id: ids[2], value: "x".repeat(500) }, { id: ids[6], value: [] }, { id: ids[8], value: "" }]));
    const data = await profileOf(user);
    assert.equal(data[ids[1]].value, "😀".repeat(50));
    assert.deepEqual(data[ids[6]], { value: "[]" });
    assert.deepEqual(data[ids[8]], { value: "" });
  });

  test("a change sends realm_user update with custom_profile_field to every active user; no change, no event", async () => {
    const ids = await oneOfEach();
    const user = await t.createUser(uniqueName("Eventful"));
    t.clearEvents();
    assertSuccess(await setOwn(user, [{ id: ids[1], value: "**Chief**" }, { id: ids[6], value: [t.users.owner.id] }]));
    const all = await t.activeUserIds();
    const person = (field: Json) => ({ type: "realm_user", op: "update", person: { user_id: user.id, custom_profile_field: field } });
    assert.deepEqual(valueEvents(), [
      { event: person({ id: ids[1], value: "**Chief**", rendered_value: "<p><strong>Chief</strong></p>" }), userIds: all },
      { event: person({ id: ids[6], value: `[${t.users.owner.id}]` }), userIds: all },
    ]);
    t.clearEvents();
    assertSuccess(await setOwn(user, [{ id: ids[1], value: "**Chief**" }]));
    assert.deepEqual(valueEvents(), []);
    assertSuccess(await setOwn(user, [{ id: ids[1], value: "Chief" }]));
    assert.deepEqual(valueEvents(), [{ event: person({ id: ids[1], value: "Chief", rendered_value: "<p>Chief</p>" }), userIds: all }]);
  });

  test("DELETE /users/me/profile_data removes values; a field without a value is no change", async () => {
    const ids = await oneOfEach();
    const user = await t.createUser(uniqueName("Remover"));
    assertSuccess(await setOwn(user, [{ id: ids[1], value: "x" }, { id: ids[4], value: "1999-12-31" }]));
    t.clearEvents();
    assertSuccess(await removeOwn(user, [ids[1], ids[2]]));
    assert.deepEqual(await profileOf(user), { [ids[4]]: { value: "1999-12-31" } });
    assert.deepEqual(valueEvents(), [
      { event: { type: "realm_user", op: "update", person: { user_id: user.id, custom_profile_field: { id: ids[1], value: null } } }, userIds: await t.activeUserIds() },
    ]);
    assertError(await removeOwn(user, [ids[4], 999999]), 400, "BAD_REQUEST", "Field id 999999 not found.");
    assert.deepEqual(Object.keys(await profileOf(user)), [String(ids[4])], "nothing removed when one ID is bad");
    assertError(await removeOwn(user, ["x"]), 400, "BAD_REQUEST", "data[0] is not an integer");
    assertError(await t.api(user, "DELETE", "/users/me/profile_data", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'data' argument");
  });

  test("editable_by_user: members, moderators and guests may not change it; administrators may", async () => {
    const locked = await createOk({ name: "Employee ID", field_type: 1, editable_by_user: false });
    const open = await createOk({ name: "Nickname", field_type: 1 });
    const msg = "You are not allowed to change this field. Contact an administrator to update it.";
    for (const user of [t.users.member, t.users.moderator, t.users.guest]) {
      assertError(await setOwn(user, [{ id: locked, value: "1" }]), 400, "BAD_REQUEST", msg);
      assertError(await removeOwn(user, [locked]), 400, "BAD_REQUEST", msg);
      assertSuccess(await setOwn(user, [{ id: open, value: "nick" }]));
    }
    for (const user of [t.users.admin, t.users.owner]) {
      assertSuccess(await setOwn(user, [{ id: locked, value: "42" }]));
      assert.deepEqual((await profileOf(user))[locked], { value: "42", rendered_value: "<p>42</p>" });
      assertSuccess(await removeOwn(user, [locked]));
    }
  });

  test("bots may not have values", async () => {
    const id = await createOk({ name: "Title", field_type: 1 });
    assertError(await setOwn(t.users.bot, [{ id, value: "x" }]), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await removeOwn(t.users.bot, [id]), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });

  test("administrators set and remove other users' values through PATCH /users/{user_id}", async () => {
    const ids = await oneOfEach();
    const locked = await createOk({ name: "Employee ID", field_type: 1, editable_by_user: false });
    const target = await t.createUser(uniqueName("Target"));
    assertSuccess(await setOwn(target, [{ id: ids[8], value: "she/her" }, { id: ids[4], value: "1990-01-01" }]));
    t.clearEvents();
    assertSuccess(
      await t.api(t.users.admin, "PATCH", `/users/${target.id}`, {
        profile_data: [
          { id: locked, value: "E-1" },
          { id: ids[8], value: null },
          { id: ids[4], value: "" },
          { id: ids[6], value: [t.users.admin.id] },
        ],
      }),
    );
    assert.deepEqual(await profileOf(target), { [locked]: { value: "E-1", rendered_value: "<p>E-1</p>" }, [ids[6]]: { value: `[${t.users.admin.id}]` } });
    const all = await t.activeUserIds();
    const person = (field: Json) => ({ event: { type: "realm_user", op: "update", person: { user_id: target.id, custom_profile_field: field } }, userIds: all });
    assert.deepEqual(valueEvents(), [
      person({ id: ids[8], value: null }),
      person({ id: ids[4], value: null }),
      person({ id: locked, value: "E-1", rendered_value: "<p>E-1</p>" }),
      person({ id: ids[6], value: `[${t.users.admin.id}]` }),
    ]);
    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${target.id}`, { profile_data: [{ id: locked, value: [] }] }));
    assert.equal(locked in (await profileOf(target)), false);
    // Errors are the self-service ones; nothing is written.
    assertError(await t.api(t.users.admin, "PATCH", `/users/${target.id}`, { profile_data: [{ id: ids[5], value: "nope" }] }), 400, "BAD_REQUEST", "Website is not a URL");
    assertError(await t.api(t.users.admin, "PATCH", `/users/${target.id}`, { profile_data: [{ id: 999999, value: "x" }] }), 400, "BAD_REQUEST", "Field id 999999 not found.");
    assertError(await t.api(t.users.admin, "PATCH", `/users/${target.id}`, { profile_data: [{ id: 999999, value: null }] }), 400, "BAD_REQUEST", "Field id 999999 not found.");
    assertError(await t.api(t.users.admin, "PATCH", `/users/${target.id}`, { profile_data: "x" }), 400, "BAD_REQUEST", 'Argument "profile_data" is not valid JSON.');
    assertError(await t.api(t.users.admin, "PATCH", `/users/${target.id}`, { profile_data: [{ id: ids[1], value: 3 }] }), 400, "BAD_REQUEST", 'profile_data[0]["value"] is not an allowed_type');
    // Other roles may not administer users.
    for (const user of [t.users.moderator, t.users.member, t.users.guest]) {
      assertError(await t.api(user, "PATCH", `/users/${target.id}`, { profile_data: [{ id: ids[1], value: "x" }] }), 400, "BAD_REQUEST", "Insufficient permission");
    }
    assertError(await t.api(t.users.admin, "PATCH", "/users/999999", { profile_data: [{ id: ids[1], value: "x" }] }), 400, "BAD_REQUEST", "No such user");
    assert.deepEqual(await profileOf(target), { [ids[6]]: { value: `[${t.users.admin.id}]` } });
  });
});

describe("register and event queues", () => {
  test("register returns the fields, the types, and every user's profile_data", async () => {
    const ids = await oneOfEach();
    await createOk({ name: "Team", field_type: 1, display_in_profile_summary: true });
    assertSuccess(await setOwn(t.users.member, [{ id: ids[2], value: "*hi*" }, { id: ids[3], value: "0" }]));
    const state = await t.register(t.users.guest, { fetch_event_types: ["custom_profile_fields", "realm_user"] });
    assert.deepEqual(state.custom_profile_fields, await listFields());
    assert.deepEqual(state.custom_profile_field_types.EXTERNAL_ACCOUNT, { id: 7, name: "External account" });
    assert.deepEqual(state.custom_profile_field_types.PRONOUNS, { id: 8, name: "Pronouns" });
    const member = state.realm_users.find((u: Json) => u.user_id === t.users.member.id);
    assert.deepEqual(member.profile_data, { [ids[2]]: { value: "*hi*", rendered_value: "<p><em>hi</em></p>" }, [ids[3]]: { value: "0" } });
    assert.deepEqual(state.realm_users.find((u: Json) => u.user_id === t.users.admin.id).profile_data, {});
    assert.equal("profile_data" in state.realm_users.find((u: Json) => u.user_id === t.users.bot.id), false);
  });

  test("a queue registered for the types receives both events", async () => {
    const { queue_id } = await t.register(t.users.member, { event_types: ["custom_profile_fields", "realm_user"] });
    const id = await createOk({ name: "Title", field_type: 1 });
    assertSuccess(await setOwn(t.users.moderator, [{ id, value: "Mod" }]));
    const events = await t.queuedEvents(t.users.member, queue_id);
    assert.deepEqual(
      events.map(({ id: _id, ...e }: Json) => e),
      [
        { type: "custom_profile_fields", fields: await listFields() },
        { type: "realm_user", op: "update", person: { user_id: t.users.moderator.id, custom_profile_field: { id, value: "Mod", rendered_value: "<p>Mod</p>" } } },
      ],
    );
  });

  test("a user who joins later is among the recipients; a deactivated one is not", async () => {
    const newcomer = await t.createUser(uniqueName("Newcomer"), Role.MEMBER);
    const leaver = await t.createUser(uniqueName("Leaver"), Role.MEMBER);
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${leaver.id}`));
    t.clearEvents();
    await createOk({ name: "Title", field_type: 1 });
    const [event] = fieldsEvents();
    assert.ok(event!.userIds.includes(newcomer.id));
    assert.ok(!event!.userIds.includes(leaver.id));
    assert.ok(event!.userIds.includes(t.users.bot.id), "bots get the list too, as Zulip's active_user_ids");
  });
});
