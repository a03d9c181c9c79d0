import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * The GraphQL packages are optional peers: an app that does not use GraphQL loads none of them
 * when it loads the library (the adapter reads `@nestjs/graphql`'s metadata by name and loads
 * `graphql` only to build an error of a GraphQL call).
 */
describe('GraphQL packages are optional peers', () => {
  it('loading the library loads no GraphQL package', () => {
    const root = join(__dirname, '..', '..');
    const loaded = execFileSync(
      process.execPath,
      [
        '-r',
        join(root, 'test/support/ts-register.js'),
        '-e',
        `require(${JSON.stringify(join(root, 'lib'))});
         const re = /[\\\\/]node_modules[\\\\/](graphql|@nestjs[\\\\/](graphql|apollo|mercurius)|@apollo[\\\\/]server|mercurius)[\\\\/]/;
         process.stdout.write(JSON.stringify(Object.keys(require.cache).filter((k) => re.test(k))));`,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    expect(JSON.parse(loaded)).toEqual([]);
  });
});
