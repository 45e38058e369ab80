/** @module test/helpers/outcome-spy – kept for old imports; the spy lives in the test kit. */
export * from '../../testing/outcome-spy.ts'
