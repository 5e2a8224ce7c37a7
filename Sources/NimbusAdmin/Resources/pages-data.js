// Data pages: the record browser (paged, typed fields, tombstones on request, delete with a
// typed confirmation) and the schema (development against production, import, deploy).
import { api, el, table, time, form, query, tokenKey } from "/ui.js";

function fieldText(field) {
  const value = field?.value;
  // The server sends an encrypted field's size, never its ciphertext (docs/api.md "Encrypted fields").
  if (field?.type === "ENCRYPTED_BYTES") return `encrypted, ${field.size ?? "?"} bytes`;
  if ((field?.type === "ASSET" || field?.type === "ASSETID") && value) return `asset, ${value.size ?? "?"} bytes, sha256 ${String(value.fileChecksum ?? "").slice(0, 12)}…`;
  if (field?.type === "TIMESTAMP") return time(value);
  if (field?.type === "REFERENCE" && value) return `→ ${value.recordName}`;
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/** Fetches an asset with the admin token and hands it to the browser as a download. */
const download = (p, asset) => async () => {
  const response = await fetch(`/api/assets?${query({ user: p.user, container: p.container, environment: p.environment,
    fileChecksum: asset.fileChecksum, size: asset.size })}`, { headers: { Authorization: `Bearer ${sessionStorage.getItem(tokenKey)}` } });
  if (!response.ok) throw new Error((await response.json()).reason);
  const url = URL.createObjectURL(await response.blob());
  const link = el("a", { href: url, download: `${asset.fileChecksum.replace(/[^A-Za-z0-9]/g, "").slice(0, 16)}.bin` });
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
};

function fieldsCell(fields, p) {
  const names = Object.keys(fields).sort();
  if (!names.length) return el("span", { class: "muted" }, "no fields");
  return el("dl", { class: "fields" }, ...names.flatMap((name) => {
    const field = fields[name];
    const asset = field.type === "ASSET" || field.type === "ASSETID" ? field.value : null;
    return [el("dt", {}, name, " ", el("span", { class: "muted" }, field.type)), el("dd", {}, fieldText(field),
      asset?.fileChecksum ? el("button", { type: "button", "data-download": asset.fileChecksum, onclick: download(p, asset) }, "Download") : "")];
  }));
}

export async function records(parameters, rerender) {
  const p = Object.fromEntries(["user", "container", "environment", "zoneName", "recordType", "tombstones", "after"].map((n) => [n, parameters.get(n) ?? ""]));
  const content = [el("h1", {}, "Records"),
    form("records-user", [{ name: "user", label: "User", value: p.user }], "Show zones", (values) => { location.hash = `#/records?${query(values)}`; })];
  if (!p.user) return content;
  const { zones } = await api(`/api/users/${encodeURIComponent(p.user)}/zones`);
  content.push(el("h2", {}, `Zones of ${p.user}`), table(["Container", "Environment", "Zone", "Records", "Tombstones"], zones.map((z) => [
    z.container, z.environment,
    el("a", { href: `#/records?${query({ user: p.user, container: z.container, environment: z.environment, zoneName: z.zoneName })}` }, z.zoneName),
    z.records, z.tombstones])));
  if (!p.zoneName) return content;
  const page = await api(`/api/records?${query({ ...p, limit: 50 })}`);
  const here = (changes) => `#/records?${query({ ...p, ...changes })}`;
  const confirmDelete = (record) => () => {
    const input = el("input", { id: "confirm-name", placeholder: record.recordName, size: 30, "aria-label": "record name" });
    const status = el("span", { class: "error", role: "alert" });
    const panel = document.getElementById("delete-panel");
    panel.replaceChildren(el("p", {}, `Delete ${record.recordName}? Devices receive a tombstone. Type its name to confirm: `), input,
      el("button", { type: "button", id: "confirm-delete", onclick: async () => {
        try {
          await api("/api/records/delete", { method: "POST", body: JSON.stringify({ user: p.user, container: p.container, environment: p.environment,
            zoneName: p.zoneName, recordName: record.recordName, confirm: input.value }) });
          rerender();
        } catch (error) { status.textContent = error.message; }
      } }, "Delete"), status);
    input.focus();
  };
  content.push(el("h2", {}, `${p.zoneName} in ${p.container} (${p.environment})`),
    el("p", {}, p.tombstones === "true" ? el("a", { href: here({ tombstones: "", after: "" }) }, "Hide tombstones")
      : el("a", { href: here({ tombstones: "true", after: "" }) }, "Show tombstones"),
      " · ", p.recordType ? el("a", { href: here({ recordType: "", after: "" }) }, `only ${p.recordType} (show all types)`) : "all types"),
    el("div", { id: "delete-panel" }),
    table(["Record", "Type", "Fields", "Modified", "By", ""], page.records.map((r) => [
      r.recordName, el("a", { href: here({ recordType: r.recordType, after: "" }) }, r.recordType),
      r.deleted ? el("em", {}, "tombstone") : fieldsCell(r.fields, p), time(r.modifiedAt), r.modifiedByDevice,
      r.deleted ? "" : el("button", { type: "button", "data-delete": r.recordName, onclick: confirmDelete(r) }, "Delete…")])),
    page.moreComing ? el("p", {}, el("a", { id: "next-page", href: here({ after: page.records.at(-1)?.recordName ?? "" }) }, "Next page →"))
      : el("p", { class: "muted" }, "End of zone."));
  return content;
}

const differenceText = {
  typeOnlyInDevelopment: "type only in development: deploy creates it",
  typeOnlyInProduction: "type only in production: deploy keeps it",
  fieldOnlyInDevelopment: "field only in development: deploy adds it",
  fieldOnlyInProduction: "field only in production: deploy keeps it",
  fieldTypeDiffers: "field types differ: deploy is refused",
  settingsDiffer: "retention or append-only differ: deploy takes development's",
};

function schemaTable(types) {
  const names = Object.keys(types);
  if (!names.length) return el("p", { class: "muted" }, "Empty.");
  return table(["Record type", "Fields", "Retention", "Append-only"], names.map((name) => [name,
    Object.entries(types[name].fields).map(([f, t]) => `${f}: ${t}`).join(", "),
    types[name].retentionDays == null ? "" : `${types[name].retentionDays} d`, types[name].appendOnly ? "yes" : ""]));
}

export async function schema(parameters, rerender) {
  const s = await api(`/api/schema?${query({ container: parameters.get("container") ?? "" })}`);
  const importArea = el("textarea", { id: "schema-file", rows: 6, cols: 80, placeholder: '{"container": "iCloud.com.example.App", "recordTypes": {...}}' });
  const environment = el("select", { id: "schema-environment" }, el("option", {}, "development"), el("option", {}, "production"));
  const status = el("p", { id: "schema-status", role: "status" });
  const run = (action) => async () => {
    try { status.textContent = await action(); status.className = ""; } catch (error) { status.textContent = error.message; status.className = "error"; }
  };
  const content = [el("h1", {}, "Schema"),
    s.containers.length ? el("p", {}, "Container: ", ...s.containers.map((c) => c === s.container ? el("strong", {}, c, " ")
      : el("a", { href: `#/schema?container=${encodeURIComponent(c)}` }, c, " "))) : el("p", { class: "muted" }, "No schema yet.")];
  if (s.container) {
    const blocked = s.differences.some((d) => d.blocksDeploy);
    content.push(el("h2", {}, "Development → production: what a deploy changes"),
      s.differences.length ? table(["Record type", "Field", "Development", "Production", "Meaning"], s.differences.map((d) =>
        [d.recordType, d.field ?? "", d.development ?? "", d.production ?? "", differenceText[d.kind] ?? d.kind]))
        : el("p", { class: "muted" }, "Production equals development."),
      el("button", { type: "button", id: "deploy", disabled: blocked || !s.differences.some((d) => d.kind !== "typeOnlyInProduction" && d.kind !== "fieldOnlyInProduction"),
        onclick: run(async () => {
          if (!confirm(`Deploy ${s.container}'s development schema to production?`)) return "";
          const result = await api("/api/schema/deploy", { method: "POST", body: JSON.stringify({ container: s.container }) });
          rerender();
          return `Deployed ${result.deployed.length} record types.`;
        }) }, "Deploy to production"),
      el("h2", {}, "Development"), schemaTable(s.development), el("h2", {}, "Production"), schemaTable(s.production));
  }
  content.push(el("h2", {}, "Import a schema file"), importArea, el("p", {}, "Into ", environment, " ",
    el("button", { type: "button", id: "import", onclick: run(async () => {
      const result = await api(`/api/schema/import?environment=${environment.value}`, { method: "POST", body: importArea.value });
      return `Imported ${result.recordTypes.length} record types into ${result.container} (${result.environment}).`;
    }) }, "Import")), status);
  return content;
}
