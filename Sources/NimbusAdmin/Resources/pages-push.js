// Push to sleeping devices: mode and topics, the outbox queue, counts since start, registrations
// with their last outcome, and the delivery log. APNs tokens come shortened from the server.
import { api, el, table, time, ago, card, form, query } from "/ui.js";

function outcomeText(outcome, status, reason) {
  if (!outcome) return "none yet";
  return [outcome, status ?? "", reason ?? ""].filter((part) => part !== "").join(" ");
}

function age(seconds) {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

export async function push(parameters) {
  const user = parameters.get("user") ?? "";
  const [p, { entries }] = await Promise.all([api(`/api/push?${query({ user, limit: 200 })}`),
    api(`/api/push/log?${query({ user, limit: 100 })}`)]);
  const failed = Object.entries(p.sinceStart.failed).map(([reason, count]) => `${reason} ${count}`).join(", ");
  const topics = Object.entries(p.topics);
  return [el("h1", {}, "Push"),
    el("div", { class: "cards" },
      card("Mode", p.mode),
      el("div", { class: "card", id: "push-queue-depth" }, el("div", { class: "muted" }, "Queue depth"),
        el("div", { class: "value" }, `${p.queue.depth}`), el("div", { class: "muted" }, `${p.queue.sending} being sent`)),
      card("Oldest queued", p.queue.oldestQueuedAt == null ? "none" : `${age(p.queue.oldestAgeSeconds)} (${time(p.queue.oldestQueuedAt)})`),
      card("Registrations", p.registrationCount),
      card("Since start", `${p.sinceStart.queued} queued, ${p.sinceStart.sent} sent, ${p.sinceStart.skippedByLongPoll} by long-poll`),
      card("Failed since start", failed || "none")),
    el("h2", {}, "Topics (--apns-topics)"),
    topics.length ? table(["Container", "Bundle id"], topics) : el("p", { class: "muted" }, "No container has a topic."),
    form("push-filter", [{ name: "user", label: "User", value: user }], "Filter", (values) => {
      location.hash = `#/push?${query(values)}`;
    }),
    el("h2", {}, `Registrations (${p.registrations.length} of ${p.registrationCount})`),
    p.registrations.length
      ? table(["User", "Device", "Token id", "Container", "Environment", "APNs", "APNs token", "Registered", "Queued", "Last outcome", "When"],
        p.registrations.map((r) => [r.user, r.deviceName, r.tokenID, r.container, r.environment, r.apnsEnvironment,
          el("code", { "data-apns-token": r.tokenID }, r.apnsToken), time(r.registeredAt), r.queued,
          outcomeText(r.lastOutcome, r.lastStatus, r.lastReason), ago(r.lastAt)]))
      : el("p", { class: "muted" }, "No device is registered for push."),
    el("h2", {}, "Delivery log (newest first)"),
    entries.length
      ? table(["Time", "User", "Device", "Notification", "Type", "Outcome", "Status", "Reason", "Attempts", "Long-poll first"],
        entries.map((e) => [time(e.at), e.user, e.deviceName ?? e.tokenID, e.notificationID, e.pushType, e.outcome,
          e.status ?? "", e.reason ?? "", e.attempts, e.byLongPoll ? "yes" : "no"]))
      : el("p", { class: "muted" }, "Nothing logged yet.")];
}
