// A binary httpResponse: the body travels base64-encoded and reaches the client as bytes.
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

export default function logo() {
  return { statusCode: 200, headers: { 'content-type': 'image/png' }, body: PIXEL, isBase64Encoded: true };
}
