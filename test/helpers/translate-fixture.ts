/** @module test/helpers/translate-fixture – kept for old imports; the fixture lives in the test kit. */
export * from '../../testing/translate-fixture.ts'
