// Swagger UI over this server's OpenAPI document: "Authorize" takes the API key (bearer), "Try it out" calls
// this origin. No online validator (it would send the document elsewhere).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: document.body.dataset.openapi,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    displayRequestDuration: true,
    showMutatedRequest: true,
  });
});
