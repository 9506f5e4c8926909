export * from "./client.js";
export * from "./errors.js";
export { EventReader } from "./events.js";
export type { PassedEvent, PlayerEvent, StandingEvent } from "./events.js";
export type * as wire from "./wire.js";  // every generated shape: wire.Page, wire.Board, ...
