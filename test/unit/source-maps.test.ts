import { describe, expect, it } from '@jest/globals';
import { withoutInlineSourceMap } from '../../operator/runtime/source-maps.js';

const MAP = '//# sourceMappingURL=data:application/json;base64,eyJ2ZXJzaW9uIjozfQ==';

describe('withoutInlineSourceMap', () => {
  it('drops an inline source map that ends the file, from text or bytes', () => {
    const code = '"use strict";\nexports.a = "é";\n';
    expect(Buffer.from(withoutInlineSourceMap(`${code}${MAP}\n`)).toString('utf8')).toBe(code);
    expect(Buffer.from(withoutInlineSourceMap(Buffer.from(`${code}${MAP}`))).toString('utf8')).toBe(code);
  });

  it('keeps a file without one, with a map file URL, or with code after the map line', () => {
    const plain = 'exports.a = 1;\n';
    expect(withoutInlineSourceMap(plain)).toBe(plain);
    const fileUrl = 'exports.a = 1;\n//# sourceMappingURL=a.js.map\n';
    expect(withoutInlineSourceMap(fileUrl)).toBe(fileUrl);
    const codeAfter = `const s = "${MAP}";\nexports.s = s;\n`;
    expect(withoutInlineSourceMap(codeAfter)).toBe(codeAfter);
  });
});
