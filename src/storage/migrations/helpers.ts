import type { ColumnDefinitionBuilder } from "kysely";
import type { Dialect } from "../database.ts";

/** An auto-incrementing integer primary key, spelled the way each dialect wants it. */
export function idColumnType(dialect: Dialect): {
  type: "integer" | "serial";
  build: (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;
} {
  return dialect === "postgres"
    ? { type: "serial", build: (c) => c.primaryKey() }
    : { type: "integer", build: (c) => c.primaryKey().autoIncrement() };
}
