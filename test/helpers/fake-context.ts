/** @module test/helpers/fake-context – kept for old imports; the fake context lives in the test kit. */
export * from '../../testing/fake-context.ts'
